// Package meshcluster tests kvtier mesh under the cluster launchers it is
// made for, on one machine: Slurm 22.05 (srun) with three logical nodes,
// each slurmd in its own network namespace on a bridge, brought up by
// scripts/mesh-cluster.sh in about a second; Open MPI's mpirun with the
// same namespaces as fake nodes (an rsh agent that enters them); and a
// torchrun-style environment the test sets itself. It checks the matrix
// each launcher gives (pairs, intra/inter labels, verification), a rank
// killed mid-run under srun, and kvtier's hostlist parser against
// scontrol's.
//
// The tests skip, with one line saying why, when not run as root, in
// -short mode, or when slurm-wlm, munge or openmpi-bin are missing
// (scripts/deps.sh test installs them). Everything they create is named
// mesh-ID (ID derived from the work directory) and removed at the end;
// only processes they started are killed.
package meshcluster
