package clusterfile

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/estimator/topology"
)

// Format writes spec as a complete YAML cluster file (every field spelled out, no
// base), with comment lines on top, and checks that it reads back to the same
// cluster: what Format writes, Load reads.
func Format(spec topology.Spec, comments []string) ([]byte, error) {
	j, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, c := range comments {
		for _, l := range strings.Split(c, "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	b.Write(y)
	out := []byte(b.String())
	back, err := Parse(out, "calibrated.yaml")
	if err != nil {
		return nil, fmt.Errorf("the written cluster file does not read back: %w", err)
	}
	if bj, _ := json.Marshal(back); string(bj) != string(j) {
		return nil, fmt.Errorf("the written cluster file reads back as a different cluster")
	}
	return out, nil
}
