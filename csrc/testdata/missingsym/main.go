// Command missingsym is a C shim's mistake on purpose: its C calls
// kv_missing, which nothing defines, and it links go-nvml, whose link
// flags (--unresolved-symbols=ignore-in-object-files) let the link pass.
// csrc's TestUnresolvedSymbols builds it to show that its check catches
// what the linker no longer does.
package main

/*
int kv_missing(void);
static int call_missing(void) { return kv_missing(); }
*/
import "C"

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func main() {
	_ = nvml.New()
	fmt.Println(C.call_missing())
}
