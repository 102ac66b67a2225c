// Package rdmavm tests kvtier's verbs transport end to end on soft-RoCE.
//
// The host kernel of a CI machine usually has no RDMA, so the test boots
// Debian's generic kernel in a small qemu guest (TCG), creates an rxe0
// device on a dummy netdev and runs kvtier serve, transfer and sweep over
// it, plus the failure cases (a refused READ, a peer killed mid-transfer,
// a GID index that does not exist). The work is done by
// scripts/rxe-vm-test.sh; the package holds only the test that drives it
// from `go test` and checks the CSVs the guest sends back. The test
// builds only with -tags rdmavm: `make test-rdma` runs it (CI runs that
// after `make test`), so the minutes of emulation do not compete with the
// race-instrumented packages of `go test -race ./...`.
//
// The test skips, with one line saying why, when it is not run as root,
// in -short mode, or when the script cannot get qemu, the packages or the
// kernel.
package rdmavm
