package clock

import "testing"

// A request's times run from its last Send: sent again (a retry without
// cache_salt, the prompt spelled as text), it is timed from the retry.
func TestRequestTimesFromLastSend(t *testing.T) {
	t.Parallel()
	var r Request
	r.Send()
	first := Start()
	if r.Since() < 0 {
		t.Fatalf("Since %v before the first send's end", r.Since())
	}
	r.Send()
	if since, outer := r.Since(), first.Elapsed(); since > outer {
		t.Errorf("after a second Send, Since %v exceeds the time since the first %v", since, outer)
	}
}
