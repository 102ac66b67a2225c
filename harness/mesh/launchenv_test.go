package mesh

import (
	"slices"
	"testing"
)

// TestLauncherEnvComplete: every variable Detect reads, under every
// launcher, is in LauncherEnv, so that a run's manifest records them all.
func TestLauncherEnvComplete(t *testing.T) {
	t.Parallel()
	all := map[string]string{}
	for _, name := range LauncherEnv {
		all[name] = "1"
	}
	all["SLURM_STEP_NODELIST"] = "node1"
	for _, launcher := range append(slices.Clone(Launchers), "") {
		read := map[string]bool{}
		env := Env{Getenv: func(name string) string { read[name] = true; return all[name] },
			Hostname: func() (string, error) { return "h", nil }}
		Detect(env, Overrides{Launcher: launcher, Rank: -1, Size: -1, LocalRank: -1})
		for name := range read {
			if !slices.Contains(LauncherEnv, name) {
				t.Errorf("launcher %q: Detect reads %s, which LauncherEnv lacks", launcher, name)
			}
		}
	}
}
