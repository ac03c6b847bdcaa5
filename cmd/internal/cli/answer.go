package cli

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
)

// printProtoJSON prints an answer as the REST gateway does, on one line.
func printProtoJSON(w io.Writer, m proto.Message) error {
	b, err := wire.MarshalJSON(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// flagged renames, in an in-process answer's error, the request fields the user
// gave as flags: flags maps a field to its flag, and cluster fields are the
// cluster's flags. Errors without fields are returned as they are.
func flagged(err error, flags map[string]string) error {
	name := func(field string) string {
		if f, ok := flags[field]; ok {
			return f
		}
		if i := strings.IndexByte(field, '['); i > 0 { // a list's entry: the list's flag
			if f, ok := flags[field[:i]]; ok {
				return f
			}
		}
		if rest, ok := strings.CutPrefix(field, "cluster."); ok {
			return "--cluster/--cluster-file: " + rest
		}
		return field
	}
	var nf *wire.NotFoundError
	var le *wire.LimitError
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("%s: %w", name(nf.Field), nf.Err)
	case errors.As(err, &le):
		return fmt.Errorf("%s: %s", name(le.Field), le.Msg)
	}
	fes := wire.FieldErrors(err)
	if len(fes) == 0 {
		return err
	}
	parts := make([]string, len(fes))
	for i, fe := range fes {
		parts[i] = name(fe.Field) + ": " + ruleFlags(fe.Rule, flags)
	}
	return errors.New(strings.Join(parts, "; "))
}

// fieldWord is a request field as a rule names it: a path or a name with an
// underscore (max_gpus, global_batch, training.seq_len, constraints.tp), with a
// list entry's index (constraints.micro_batch[0]); plain words are not.
var fieldWord = regexp.MustCompile(`\b[a-z][a-z0-9]*(?:[._][a-z0-9]+)+\b(?:\[[0-9]+\])?`)

// ruleFlags names, in a rule, the other fields it quotes that the command's
// flags set by those flags ("and max_gpus 8" as "and --max-gpus 8", "but
// constraints.tp lists" as "but --tp lists", a list's entry
// "constraints.micro_batch[0]" as "--mbs"), by their path or their last name
// (global_batch for training.global_batch) when that names one flag. A field
// given by a file (the flags' "--in: …") keeps its name.
func ruleFlags(rule string, flags map[string]string) string {
	return fieldWord.ReplaceAllStringFunc(rule, func(word string) string {
		w, _, _ := strings.Cut(word, "[") // a list's entry: the list's flag
		f, ok := flags[w]
		if !ok { // by its last name, when that names one flag
			for field, flag := range flags {
				if strings.HasSuffix(field, "."+w) {
					if ok && flag != f {
						return word // two flags (training.fp8_params, constraints.fp8_params)
					}
					f, ok = flag, true
				}
			}
		}
		if !ok || !strings.HasPrefix(f, "--") || strings.Contains(f, ": ") {
			return word
		}
		return f
	})
}

// flaggedWarning renames the field an answer's warning starts with ("field: …")
// to the flag that gives it, when one does, and the fields its text names, as an
// error's rule is (ruleFlags), with the values as the flags take them
// (wire.CommandLineSpelling): "--placement-tolerance: no effect: without
// --free-map, exclude_nodes or degraded_nodes …" named two fields by the API's
// names beside a flag, and "--protocol: PROTOCOL_LL is not what the chosen
// ALGORITHM_NVLS runs" the values of --protocol ll --algo nvls by theirs.
func flaggedWarning(w string, flags map[string]string) string {
	w = wire.CommandLineSpelling(w)
	if field, rest, ok := strings.Cut(w, ": "); ok {
		if f, ok := flags[field]; ok {
			return f + ": " + ruleFlags(rest, flags)
		}
	}
	return w
}

// checkNames refuses, by its flag, a name the API has no value for (a precision,
// a recompute mode, a pipeline schedule, …): a request cannot carry it, so the
// estimator would never see it. So too a value the request's narrower integer
// would change on the way (training.cp_nccl_max_ctas and its dp and tp peers, and
// training.cuda_device_max_connections, are int32s: 2³² + 1 would arrive as 1).
func checkNames(t step.Training, l step.Layout, flags map[string]string) error {
	if err := t.Validate(); err != nil {
		var only []error
		for _, fe := range wire.FieldErrors(err) {
			switch fe.Field {
			case "training.precision", "training.zero3_backward_prefetch", "training.fp8_recipe", "training.moe_dispatcher", "training.param_gather",
				"training.cp_nccl_max_ctas", "training.dp_nccl_max_ctas", "training.tp_nccl_max_ctas", "training.cuda_device_max_connections":
				only = append(only, fe)
			}
		}
		if len(only) > 0 {
			return flagged(errors.Join(only...), flags)
		}
	}
	back, err := wire.LayoutFromProto(wire.LayoutToProto(l))
	if err != nil {
		return flagged(err, flags)
	}
	switch {
	case l.Recompute != "" && back.Recompute != l.Recompute:
		return fmt.Errorf("--recompute: must be none, selective, ops or full (got %q)", l.Recompute)
	case l.Schedule != "" && back.Schedule != l.Schedule:
		return fmt.Errorf("--schedule: must be gpipe, 1f1b, interleaved, zb-h1, zb-v or dualpipe (got %q)", l.Schedule)
	case l.Offload != "" && back.Offload != l.Offload:
		return fmt.Errorf("--offload: must be none, optimizer or params (got %q)", l.Offload)
	}
	return nil
}
