package system

// CollectNIC is the NIC collector, for tests that give it a manifest
// with GPUs already found.
var CollectNIC = collectNIC

// PythonTimeout is pythonTimeout, for the tests of package system_test.
const PythonTimeout = pythonTimeout
