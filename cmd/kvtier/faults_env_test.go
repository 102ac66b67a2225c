package main

// The tests (and the helper processes, which are this test binary) read
// the KVTIER_TEST_* fault switches, as a kvtier_testfaults build does.
func init() { peerFaults = envFaults }
