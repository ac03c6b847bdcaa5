package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/stepcost/stepcost/picture"
)

// writeSVG writes a picture to the file the --svg flag names, or to stdout for
// "-". Errors name the flag.
func writeSVG(path string, fig picture.Figure, stdout io.Writer) error {
	doc := fig.SVG()
	if path == "-" {
		if _, err := stdout.Write(doc); err != nil {
			return fmt.Errorf("--svg -: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	return nil
}

// svgFlagHelp is the --svg flag's description.
const svgFlagHelp = "also draw the answer as an SVG picture into this file (- for standard output, instead of the table)"
