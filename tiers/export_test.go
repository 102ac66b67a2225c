package tiers

// AllocTest is alloc for the external tests (package tiers_test).
var AllocTest = alloc
