// Package realserver holds kvtier's tests against real serving engines,
// independently written, that `make test-servers` builds and starts on
// this machine's CPU: today Ollama v0.6.8, serving a LLaMA model with
// random weights that the tests write themselves (internal/gguf).
//
// The tests carry the build tag "servers", so `make test` and
// `go test ./...` never start a server; scripts/test-servers.sh builds
// Ollama (cached between runs), builds kvtier, and runs
//
//	go test -tags servers ./internal/realserver -ollama BIN -kvtier BIN
//
// Every process a test starts carries a marker in its environment; each
// test ends by checking that no process with its marker is left (Ollama's
// runner subprocesses included).
package realserver
