package mesh

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"n[1-3,7],gpu[01-04]-ib", []string{"n1", "n2", "n3", "n7", "gpu01-ib", "gpu02-ib", "gpu03-ib", "gpu04-ib"}, ""},
		{"rack[1-2]-n[01-02]", []string{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}, ""},
		{"n[009-011]", []string{"n009", "n010", "n011"}, ""},
		{"n[8-10]", []string{"n8", "n9", "n10"}, ""},
		{"n[1-03]", []string{"n1", "n2", "n3"}, ""},
		{"a,,b c", []string{"a", "b", "c"}, ""},
		{"login", []string{"login"}, ""},
		{"", nil, ""},
		{"n[3-1]", nil, "backwards"},
		{"n[1-2", nil, "unbalanced"},
		{"n1-2]", nil, "without '['"},
		{"n[1-[2]]", nil, "nested"},
		{"n[a]", nil, "not a number"},
		{"n[]", nil, "empty number"},
		{"n[1-]", nil, "empty number"},
		{"n[0-70000]", nil, "more than 65536"},
		{"a[0-300]b[0-300]", nil, "more than 65536"},
		// A name of 253 characters is the longest DNS allows; one longer,
		// alone or built by a range, is refused before it is built.
		{strings.Repeat("h", 253), []string{strings.Repeat("h", 253)}, ""},
		{strings.Repeat("h", 254), nil, "longer than 253"},
		{strings.Repeat("h", 120000) + "[1-65536]", nil, "longer than 253"},
		{strings.Repeat("h", 250) + "[1-1000]", nil, "longer than 253"},
		{"n[1-2]" + strings.Repeat("x", 252), nil, "longer than 253"},
		// A number padded to 120,000 digits, or a list of more than
		// 1 MiB, is refused before a name is built (the padded range
		// once printed 65,536 names of 120,000 digits: out of memory).
		{"n[" + strings.Repeat("0", 119995) + "1-65536]", nil, "longer than 253"},
		{"n[1-" + strings.Repeat("0", 119995) + "65536]", nil, "longer than 253"},
		{"n[" + strings.Repeat("0", 252) + "1-65536]", nil, "longer than 253"},
		{"n[8-" + strings.Repeat("0", 251) + "10]", []string{"n8", "n9", "n10"}, ""},
		{strings.Repeat("n1,", 400000), nil, "longer than 1048576 bytes"},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || len(err.Error()) > 200 {
				t.Errorf("%.80q: err %.300v, want a short one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"n[1-3,7],gpu[01-04]-ib", "a[1-2]b[3-4]", "n[", "]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err == nil && len(hosts) > MaxHosts {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if len(h) > MaxHostName {
				t.Fatalf("%q: a host name of %d characters", s, len(h))
			}
		}
		if err != nil && len(err.Error()) > 1024 {
			t.Fatalf("a %d-byte error for a %d-byte list", len(err.Error()), len(s))
		}
	})
}

// envOf is a Getenv over a map.
func envOf(kv ...string) Env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return Env{Getenv: func(k string) string { return m[k] }, Hostname: func() (string, error) { return "host-a", nil }}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	slurm := []string{"SLURM_PROCID", "4", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1", "SLURM_NODEID", "2",
		"SLURM_STEP_NODELIST", "n[1-3]", "SLURMD_NODENAME", "n3", "SLURM_JOB_ID", "17", "SLURM_STEP_ID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}
	tests := []struct {
		name string
		env  Env
		ov   func(*Overrides)
		want Launch
		err  string
	}{
		{"slurm", envOf(slurm...), nil, Launch{Launcher: LauncherSlurm, Rank: 4, Size: 6, LocalRank: 1, LocalSize: 2, Node: "n3",
			Nodes: []string{"n1", "n2", "n3"}, Coordinator: "n1:29517", CoordinatorFrom: "slurm nodelist", Job: "17.0"}, ""},
		{"slurm, coordinator flag", envOf(slurm...), func(o *Overrides) { o.Coordinator = "10.0.0.1:5000" },
			Launch{Launcher: LauncherSlurm, Rank: 4, Size: 6, LocalRank: 1, LocalSize: 2, Node: "n3", Nodes: []string{"n1", "n2", "n3"},
				Coordinator: "10.0.0.1:5000", CoordinatorFrom: "flag", Job: "17.0"}, ""},
		{"openmpi", envOf("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3", "OMPI_COMM_WORLD_LOCAL_RANK", "0", "PMIX_RANK", "2",
			"MASTER_ADDR", "node1", "MASTER_PORT", "7000"), nil,
			Launch{Launcher: LauncherOpenMPI, Rank: 2, Size: 3, Node: "host-a", Coordinator: "node1:7000", CoordinatorFrom: "MASTER_ADDR"}, ""},
		{"pmix", envOf("PMIX_RANK", "1", "PMI_SIZE", "2"), func(o *Overrides) { o.Coordinator = "h:1" },
			Launch{Launcher: LauncherPMI, Rank: 1, Size: 2, Node: "host-a", Coordinator: "h:1", CoordinatorFrom: "flag"}, ""},
		{"torchrun", envOf("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "10.1.1.1"), nil,
			Launch{Launcher: LauncherTorchrun, Rank: 1, Size: 4, LocalRank: 1, LocalSize: 2, Node: "host-a", Coordinator: "10.1.1.1:29500", CoordinatorFrom: "MASTER_ADDR"}, ""},
		{"flags override the launcher", envOf("RANK", "1", "WORLD_SIZE", "4", "MASTER_ADDR", "m"),
			func(o *Overrides) { o.Rank, o.Size, o.Node = 0, 2, "x" },
			Launch{Launcher: LauncherTorchrun, Rank: 0, Size: 2, Node: "x", Coordinator: "m:29500", CoordinatorFrom: "MASTER_ADDR"}, ""},
		{"no launcher, no flags", envOf(), nil, Launch{}, "--world-size"},
		{"rank beyond the size", envOf("RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "m"), nil, Launch{}, "--rank: 4 is not below"},
		{"bad number", envOf("RANK", "x", "WORLD_SIZE", "4", "MASTER_ADDR", "m"), nil, Launch{}, `RANK="x" is not a number`},
		{"no coordinator", envOf("RANK", "0", "WORLD_SIZE", "1"), nil, Launch{}, "--coordinator"},
		{"bad coordinator", envOf("RANK", "0", "WORLD_SIZE", "1"), func(o *Overrides) { o.Coordinator = "nohost" }, Launch{}, "want HOST:PORT"},
		{"unknown launcher", envOf(), func(o *Overrides) { o.Launcher = "lsf" }, Launch{}, "unknown launcher"},
	}
	for _, tc := range tests {
		ov := NoOverrides()
		if tc.ov != nil {
			tc.ov(&ov)
		}
		got, err := Detect(tc.env, ov)
		if tc.err != "" {
			if err == nil || !strings.Contains(render(err), tc.err) {
				t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(got.Nodes, tc.want.Nodes) {
			t.Errorf("%s: nodes %v, want %v", tc.name, got.Nodes, tc.want.Nodes)
		}
		got.Nodes, tc.want.Nodes = nil, nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// render flattens joined option errors as "--field: problem".
func render(err error) string {
	var parts []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if e != nil {
			parts = append(parts, "--"+e.Error())
		}
	}
	walk(err)
	return strings.Join(parts, "; ")
}

func TestSlurmNodeAddr(t *testing.T) {
	t.Parallel()
	env := envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "n[1-2]", "SLURM_JOB_ID", "3")
	env.NodeAddr = func(n string) (string, error) { return map[string]string{"n1": "198.19.0.1"}[n], nil }
	l, err := Detect(env, NoOverrides())
	if err != nil || l.Coordinator != "198.19.0.1:29503" {
		t.Fatalf("coordinator %q, %v: want n1's NodeAddr", l.Coordinator, err)
	}
	env.NodeAddr = func(string) (string, error) { return "", errors.New("no scontrol") }
	if l, _ := Detect(env, NoOverrides()); l.Coordinator != "n1:29503" {
		t.Fatalf("coordinator %q without NodeAddr: want the node name", l.Coordinator)
	}
}

func TestTasksOnNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list string
		id   int
		want int
	}{{"2(x3)", 2, 2}, {"2(x3)", 3, 0}, {"3,1", 1, 1}, {"4(x2),1", 2, 1}, {"x", 0, 0}} {
		if got := tasksOnNode(tc.list, tc.id); got != tc.want {
			t.Errorf("tasksOnNode(%q, %d) = %d, want %d", tc.list, tc.id, got, tc.want)
		}
	}
}
