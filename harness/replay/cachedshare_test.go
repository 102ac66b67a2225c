package replay

import (
	"strings"
	"testing"

	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// No replay or knee table shows a cached share above 100 %, and the
// requests whose figures were impossible are counted beside it.
func TestCachedShareCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, share, impossible string
		want                    string // in the cell or its note
		deny                    string // never in the cell
	}{
		{"plain", "0.5", "0", "50.0 %", "impossible"},
		{"old results above 100 %", "72.649", "", "impossible: the server reported more cached tokens", "7264.9 %"},
		{"some impossible", "0.4", "3", "3 requests with impossible server figures left out", ""},
		{"all impossible", "", "5", "impossible: every request's cached tokens were (5", ""},
		{"none sent", "", "0", "the server sent no usage cached_tokens", "impossible"},
	} {
		r := results.Row{Extra: map[string]string{results.ColCachedShare: tc.share, results.ColServerImpossible: tc.impossible}}
		tab := report.NewTable("cached share (usage)")
		tab.Add(cachedShareCell(tab, r, report.FmtShare(r.Float(results.ColCachedShare))))
		got := tab.String()
		if !strings.Contains(got, tc.want) || (tc.deny != "" && strings.Contains(got, tc.deny)) {
			t.Errorf("%s: table\n%s\nwant %q, never %q", tc.name, got, tc.want, tc.deny)
		}
	}
}
