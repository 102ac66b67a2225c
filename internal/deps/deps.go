package deps

import (
	_ "github.com/Mellanox/rdmamap"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/montanaflynn/stats"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/spf13/pflag"
	_ "golang.org/x/perf/benchfmt"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/plot"
)
