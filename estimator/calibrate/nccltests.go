// Package calibrate fits a cluster's physical constants to an operator's own
// measurements: nccl-tests output files as the tools print them and training logs
// of the common frameworks. It parses the files (refusing, with the file and line,
// anything it does not understand), fits the link efficiencies and latencies of the
// cluster description and the GPU's sustained compute scale within physical bounds,
// scores the fit by leaving each input file out in turn, and flags inputs that
// contradict the others.
//
// The package is pure: it reads bytes handed to it and returns values; the command
// line reads the files and writes the calibrated cluster file.
package calibrate

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Point is one message size of an nccl-tests sweep.
type Point struct {
	Line  int     // line of the file the row is on (1-based)
	Bytes float64 // nccl-tests size convention (total buffer for all-gather and reduce-scatter)
	// TimeUs is the out-of-place time of one call, µs; InPlaceUs the in-place one
	// (0 when the tool printed none, as alltoall_perf and sendrecv_perf may).
	TimeUs, InPlaceUs float64
	AlgBW, BusBW      float64 // out-of-place, GB/s, as printed
}

// Sweep is one nccl-tests output file.
type Sweep struct {
	File string
	Op   collective.Op
	// Bench is the test binary (all_reduce_perf, …), from the file or the layout.
	Bench string
	// Nodes, GPUsPerNode and Ranks are read from the device lines of the header
	// ("#  Rank  0 Group  0 Pid 123 on host device 0 [0x..] NVIDIA H100 …"), or
	// taken from the layout the caller gives when the file has none.
	Nodes, GPUsPerNode, Ranks int
	Hosts                     []string
	// Device is the GPU name the header prints ("NVIDIA H100 80GB HBM3").
	Device string
	// Launch: one process per GPU (MPI), several GPUs per process (-g N, -t N), or
	// under a CUDA graph (-G).
	Launch collective.Launch
	// Algo is the algorithm the run forced with NCCL_ALGO (from the layout);
	// Auto when NCCL chose.
	Algo collective.Algorithm
	// Protocol is the protocol the run forced with NCCL_PROTO, when ForceProtocol
	// (a measurement table's protocol field).
	Protocol      collective.Protocol
	ForceProtocol bool
	// FromHeader says Nodes and GPUsPerNode were read from the header's device lines.
	FromHeader bool
	// FromRows says the sweep was read from measurement rows (JSON lines), whose
	// fields state the nodes and GPUs per node.
	FromRows bool
	Points   []Point
	// Notes are things the reader noticed and set aside (outlier rows, a missing
	// closing summary).
	Notes []string
	// NCCL is the NCCL release the run states (major.minor.patch): NCCL's own
	// "NCCL version 2.29.3+cuda13.1" line, nccl-tests' "nccl-library=22602" or
	// a measurement row's library_version; empty when it states none. The
	// sweep is priced by its rules (p2p LL threshold, channels per net peer,
	// Blackwell's NVLS channels), as stepcost accuracy prices a row.
	NCCL string
}

// Layout is what the caller states about an input file the file itself does not say.
type Layout struct {
	Nodes       int    `json:"nodes,omitempty"`
	GPUsPerNode int    `json:"gpus_per_node,omitempty"`
	Op          string `json:"op,omitempty"`     // for a file that does not name its test
	Launch      string `json:"launch,omitempty"` // per-process, single-process, eager, graph
	// Algo is the algorithm the run forced (NCCL_ALGO=Ring, Tree, NVLS, …): the
	// sweep is then priced with it, in the fit and in the scores.
	Algo string `json:"algo,omitempty"`
}

// FileError is an input the reader did not understand: the file, the line (0 for
// the file as a whole) and why.
type FileError struct {
	File string
	Line int
	Msg  string
	// Layout is the field of the layout given beside the file that is at fault
	// (a training log's "tp", "model"), by its layout-file key; "" when the
	// file is.
	Layout string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ncclAlgo is the algorithm a run that set NCCL_ALGO=s ran: NCCL_ALGO=Tree runs
// NCCL's double binary tree, the others the algorithm of their name.
func ncclAlgo(s string) (collective.Algorithm, error) {
	a, err := collective.ParseAlgorithm(s)
	if a == collective.Tree {
		a = collective.DoubleTree
	}
	return a, err
}

func fileErr(file string, line int, format string, args ...any) error {
	return &FileError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var (
	// MPI launchers prefix every line ("[1,0]<stdout>:", "[0] "), and so does
	// Slurm's srun --label (" 0: "): a number then a colon, which no data row has;
	// pdsh and clush prefix the host ("node01: "), a name then a colon and a blank,
	// which neither a data row nor the library's log ("node01:4242:4300 [0] NCCL
	// INFO …") has.
	mpiPrefix = regexp.MustCompile(`^\s*(\[\d+,\d+\]<std(out|err)>:|\[\d+\]\s|\d+:\s|[A-Za-z][\w.-]*:\s)`)
	// Other processes' messages in the same output: Open MPI's, tagged with the
	// host and pid ("[node02:12345] 7 more processes have sent help message …",
	// orte/util/show_help.c), and UCX's, a timestamp then host:pid:thread
	// ("[1704067200.123456] [node02:12345:0]  ucp_context.c:1176 UCX  WARN …").
	launcherMsg = regexp.MustCompile(`^\[[\w.-]+:\d+\]\s|^\[\d+\.\d+\]\s+\[[\w.-]+:\d+:\d+\]`)
	// "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
	nThreadRe = regexp.MustCompile(`nThread\s+(-?\d+)\s+nGpus\s+(-?\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)`)
	graphRe   = regexp.MustCompile(`graph:\s*(\d+)`)
	// "# Out of bounds values : 0 OK", the data check's closing count of wrong
	// elements over the whole run ("3 FAILED" when there were some).
	wrongSumRe = regexp.MustCompile(`Out of bounds values\s*:\s*(\d+)\s*(\w*)`)
	// "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3"
	// (older tools print no Group).
	deviceRe = regexp.MustCompile(`^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*?)\s*$`)
	// A test binary's name, with the suffix of a build made with NAME_SUFFIX
	// ("all_reduce_perf_mpi", nccl-tests src/Makefile); alltoallv_perf
	// (nccl-tests 2.19) is a test of its own.
	benchRe = regexp.MustCompile(`\b(all_reduce|all_gather|reduce_scatter|alltoallv|alltoall|sendrecv|broadcast|reduce|hypercube|gather|scatter)_perf(?:_\w+)?\b`)
	numRe   = `[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`
	// A data row: size count type redop [root] then out-of-place time algbw busbw
	// #wrong and in-place time algbw busbw #wrong ("N/A" where not checked).
	rowRe = regexp.MustCompile(`^(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(?:(-?\d+)\s+)?(` + numRe + `)\s+(` + numRe + `)\s+(` + numRe + `)\s+(\S+)(?:\s+(` + numRe + `)\s+(` + numRe + `)\s+(` + numRe + `)\s+(\S+))?\s*$`)
	// One non-negative number, one whole number: a row's columns.
	numOnlyRe = regexp.MustCompile(`^` + numRe + `$`)
	digitsRe  = regexp.MustCompile(`^\d+$`)
	intRe     = regexp.MustCompile(`^-?\d+$`)
	// A line that starts like a data row (a number, then a number) but may be cut short.
	rowStartRe = regexp.MustCompile(`^\d+\s+\d+\b`)
	// The timestamp nccl-tests 2.18.5 and later suffix to each row with -S 1
	// (TIME_STRING_FORMAT "%Y-%m-%d %H:%M:%S", src/util.cu).
	rowStampRe = regexp.MustCompile(`\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$`)
	// The release NCCL prints at its first communicator ("NCCL version
	// 2.29.3+cuda13.1", init.cc showVersion; in its INFO log too), and the
	// library's version code nccl-tests 2.14 and later print in their first
	// line ("# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602",
	// src/common.cu, from ncclGetVersion).
	// The release is the whole word, up to NCCL's "+cuda…" (2.28.7+cuda13.0), read
	// by topology.ParseNCCLRelease: "2.28.7.1.2" is refused, not read as 2.28.7.
	ncclVersionRe = regexp.MustCompile(`\bNCCL version (\d[^\s+]*)`)
	ncclLibraryRe = regexp.MustCompile(`\bnccl-library=(\d+)\b`)
)

// ncclVersionCode reads ncclGetVersion's code: X*1000+Y*100+Z up to 2.8,
// X*10000+Y*100+Z from 2.9 (nccl.h.in, NCCL_VERSION).
func ncclVersionCode(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// benchOps maps nccl-tests binaries to the operation they time.
var benchOps = map[string]collective.Op{
	"all_reduce_perf":     collective.AllReduce,
	"all_gather_perf":     collective.AllGather,
	"reduce_scatter_perf": collective.ReduceScatter,
	"alltoall_perf":       collective.AllToAll,
	"sendrecv_perf":       collective.SendRecv,
	"broadcast_perf":      collective.Broadcast,
	"reduce_perf":         collective.Reduce,
}

// IsNCCLTests says whether data looks like nccl-tests output: its column header, its
// nThread line or its closing summary.
func IsNCCLTests(data []byte) bool {
	return bytes.Contains(data, []byte("nThread")) && bytes.Contains(data, []byte("nGpus")) ||
		bytes.Contains(data, []byte("algbw")) && bytes.Contains(data, []byte("busbw")) ||
		bytes.Contains(data, []byte("Avg bus bandwidth"))
}

// ParseNCCLTests reads one nccl-tests output file. name is used in errors; layout
// fills what the file does not state (the node and GPU counts of an output whose
// device lines were not kept, the test of an output that does not name it) and is
// checked against what it does state.
func ParseNCCLTests(name string, data []byte, layout Layout) (Sweep, error) {
	s := Sweep{File: name}
	type device struct {
		rank, pid int
		host      string
	}
	var devs []device
	type placement struct {
		host, gpu string
		line      int
	}
	placed := map[int]placement{}
	var nGpus, nThread int
	sawHeader, sawColumns, sawSummary := false, false, false
	lastRow := 0
	// The data types and reductions of the rows: -d all and -o all time every
	// size once per type and per reduction (nccl-tests common.cu, run()).
	var types, redops []string
	ncclLine := 0    // the line that stated the release
	perIter := false // the table has nccl-tests' per-iteration columns (-I 1)
	wrongCounts := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	// Lines up to 1 MiB. The buffer starts at the scanner's 4 KiB and grows only
	// when a line is long: a 64 KiB one made and cleared on every call was a
	// third of the parse of a short output.
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Text()
		if !strings.ContainsFunc(raw, func(r rune) bool { return r != ' ' && r != '\t' }) {
			continue
		}
		if strings.ContainsRune(raw, 0) || !validText(raw) {
			return s, fileErr(name, line, "not text: nccl-tests prints plain text")
		}
		// Each pattern is tried only on a line holding its fixed text: a line
		// is read against all of them, and the regular expressions, not the
		// scan, were the parse's time (1 ms for a 6 KB output).
		t := raw
		if strings.ContainsAny(raw, ":]") {
			t = mpiPrefix.ReplaceAllString(raw, "")
		}
		t = strings.TrimSpace(t)
		if !strings.Contains(t, "_perf") {
			// no test binary named
		} else if m := benchRe.FindStringSubmatch(t); m != nil {
			if bench := m[1] + "_perf"; s.Bench == "" {
				s.Bench = bench
			} else if bench != s.Bench && (sawHeader || sawColumns) {
				// Outputs appended to one file: the sizes of the second would be
				// read as more of the first test's.
				return s, fileErr(name, line, "%s after %s: two tests in one file (outputs appended); give each test its own file", bench, s.Bench)
			}
		}
		release := ""
		if strings.Contains(t, "NCCL version ") {
			if m := ncclVersionRe.FindStringSubmatch(t); m != nil {
				release = m[1]
			}
		} else if strings.Contains(t, "nccl-library=") {
			if m := ncclLibraryRe.FindStringSubmatch(t); m != nil {
				code, _ := strconv.Atoi(m[1])
				release = ncclVersionCode(code)
			}
		}
		if release != "" {
			if _, _, err := topology.ParseNCCLRelease(release); err != nil {
				return s, fileErr(name, line, "NCCL %s: %v", release, err)
			}
			if s.NCCL != "" && release != s.NCCL {
				return s, fileErr(name, line, "NCCL %s here, NCCL %s at line %d: two runs of different releases in one file; give each run its own file", release, s.NCCL, ncclLine)
			}
			if s.NCCL == "" {
				s.NCCL, ncclLine = release, line
			}
		}
		var dm []string // a device line's fields
		if strings.Contains(t, "Rank") {
			dm = deviceRe.FindStringSubmatch(t)
		}
		switch {
		case strings.Contains(t, "nThread") && nThreadRe.MatchString(t):
			m := nThreadRe.FindStringSubmatch(t)
			nThread, _ = strconv.Atoi(m[1])
			nGpus, _ = strconv.Atoi(m[2])
			// nccl-tests runs at least one thread of at least one GPU (-t, -g).
			if nThread < 1 || nGpus < 1 {
				return s, fileErr(name, line, "nThread %s nGpus %s: each must be at least 1 (nccl-tests' -t and -g)", m[1], m[2])
			}
			if g := graphRe.FindStringSubmatch(t); g != nil && g[1] != "0" {
				s.Launch = collective.Graph
			}
			sawHeader = true
			continue
		case dm != nil:
			m := dm
			rank, _ := strconv.Atoi(m[1])
			pid, _ := strconv.Atoi(m[2])
			// A rank printed again on another GPU is another run: an output of
			// another cluster appended, or — every process printing "Rank 0" —
			// an mpirun or srun of nccl-tests built without MPI=1, where each
			// process times a collective of its own GPUs only.
			if d, ok := placed[rank]; ok && (d.host != m[3] || d.gpu != m[4]) {
				return s, fileErr(name, line, "rank %d is on %s device %s here and on %s device %s at line %d: two runs in one file, or each process ran a test of its own (nccl-tests built without MPI=1 under mpirun or srun); give one run's output, of a build with MPI, per file", rank, m[3], m[4], d.host, d.gpu, d.line)
			} else if !ok {
				placed[rank] = placement{m[3], m[4], line}
			}
			devs = append(devs, device{rank, pid, m[3]})
			if s.Device == "" {
				s.Device = m[5]
			}
			continue
		case strings.Contains(t, "Out of bounds values") && wrongSumRe.MatchString(t):
			if m := wrongSumRe.FindStringSubmatch(t); m[1] != "0" || m[2] == "FAILED" {
				return s, fileErr(name, line, "%s: the run's data check found wrong results, so its times are not a healthy fabric's (rerun it)", strings.TrimSpace(strings.TrimPrefix(t, "#")))
			}
			continue
		case strings.Contains(t, "algbw") && strings.Contains(t, "busbw"):
			// The column header, with its comment mark or without (outputs
			// copied from a web page or a notebook lose it: testdata/h100-ib):
			// read the same either way.
			sawColumns = true
			perIter = strings.Contains(t, "i_min")
			wrongCounts = strings.Contains(t, "#wrong")
			// -C 1 (report_cputime) prints the host's time to enqueue the
			// calls, taken before they complete (nccl-tests and rccl-tests
			// src/common.cu, cputimeSec), under "cputime".
			if strings.Contains(t, "cputime") {
				return s, fileErr(name, line, "cputime columns: the run reported the host's time to enqueue the calls (-C 1), not the collective's; rerun without -C")
			}
			continue
		case strings.HasPrefix(t, "#") || strings.Contains(t, "out-of-place") || strings.Contains(t, "(elements)"):
			if strings.Contains(t, "Avg bus bandwidth") {
				sawSummary = true
			}
			continue
		case strings.Contains(t, "Avg bus bandwidth"):
			sawSummary = true
			continue
		case strings.HasPrefix(t, "Out of bounds values"), strings.HasPrefix(t, "Collective test"),
			strings.HasPrefix(t, "nccl-tests version"), strings.HasPrefix(t, "Using devices"):
			continue
		case strings.Contains(t, " NCCL INFO ") || strings.Contains(t, " NCCL WARN "):
			continue // the library's own log, interleaved with the table
		case strings.HasPrefix(t, "[") && launcherMsg.MatchString(t):
			continue
		}
		if rowStartRe.MatchString(t) {
			if !sawColumns && !sawHeader {
				return s, fileErr(name, line, "a table row before any nccl-tests header (no nThread line, no size/time/algbw/busbw columns)")
			}
			if strings.Contains(t, ":") {
				t = rowStampRe.ReplaceAllString(t, "")
			}
			if f := strings.Fields(t); perIter && len(f) == 21 {
				// -I 1 (nccl-tests 2.19, writePerIterReport): i_min, i_max,
				// i_p99 and i_cv% after each #wrong; the times are the columns
				// before them.
				t = strings.Join(slices.Concat(f[:9], f[13:17]), " ")
			}
			if f := strings.Fields(t); f[0] == "0" && len(f) >= 8 {
				// -b 0 with a step in bytes (-i): the call's fixed cost, no data.
				s.Notes = append(s.Notes, fmt.Sprintf("line %d: size 0 moves no data; set aside", line))
				continue
			}
			p, typ, redop, err := parseRow(t, wrongCounts)
			if err != nil {
				return s, fileErr(name, line, "%v", err)
			}
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
			if !slices.Contains(redops, redop) {
				redops = append(redops, redop)
			}
			p.Line = line
			s.Points = append(s.Points, p)
			lastRow = line
			continue
		}
		if len(s.Points) > 0 || sawColumns {
			// Text inside or after the table that is not nccl-tests': a log of
			// something else, or the tool's output spliced with another.
			return s, fileErr(name, line, "not an nccl-tests line: %q", clip(t))
		}
		// Text before the header: a command line, a prompt, a launcher's banner.
	}
	if err := sc.Err(); err != nil {
		return s, fileErr(name, 0, "%v", err)
	}
	if len(s.Points) == 0 {
		if !sawHeader && !sawColumns {
			return s, fileErr(name, 0, "not nccl-tests output: no nThread header, no size/time/algbw/busbw table")
		}
		return s, fileErr(name, 0, "truncated: the header is there but no measured row follows")
	}
	if len(types) > 1 || len(redops) > 1 {
		s.Notes = append(s.Notes, fmt.Sprintf("rows of %d data types (%s) and %d reductions (%s), read together as repeats of each size", len(types), strings.Join(types, ", "), len(redops), strings.Join(redops, ", ")))
	}
	if !sawSummary {
		s.Notes = append(s.Notes, fmt.Sprintf("no closing \"Avg bus bandwidth\" line after line %d: the output may be cut short (every row read was whole)", lastRow))
	}

	// Nodes, GPUs per node and ranks.
	if len(devs) > 0 {
		// Newer nccl-tests abridge the list to the first and last rank of each host
		// ("Rank 0 … Rank 7 … Rank 8 … Rank 15"), so a host holds the ranks from its
		// lowest to its highest.
		lo, hi := map[string]int{}, map[string]int{}
		pids := map[string]int{}
		seen := map[int]bool{}
		maxRank := 0
		for _, d := range devs {
			if seen[d.rank] {
				continue // MPI launchers can repeat the header once per process
			}
			seen[d.rank] = true
			if _, ok := lo[d.host]; !ok {
				s.Hosts = append(s.Hosts, d.host)
				lo[d.host], hi[d.host] = d.rank, d.rank
			}
			lo[d.host], hi[d.host] = min(lo[d.host], d.rank), max(hi[d.host], d.rank)
			pids[fmt.Sprintf("%s/%d", d.host, d.pid)]++
			maxRank = max(maxRank, d.rank)
		}
		s.Nodes = len(s.Hosts)
		s.Ranks = maxRank + 1
		per := hi[s.Hosts[0]] - lo[s.Hosts[0]] + 1
		total := 0
		for _, h := range s.Hosts {
			n := hi[h] - lo[h] + 1
			total += n
			if n != per {
				return s, fileErr(name, 0, "the header's device lines put %d ranks on %s and %d on %s: calibration needs the same number of GPUs on every node", per, s.Hosts[0], n, h)
			}
		}
		if total != s.Ranks {
			return s, fileErr(name, 0, "the header's device lines interleave the hosts' ranks (%d ranks on %d hosts, not in blocks): calibration needs each node's GPUs to hold consecutive ranks", s.Ranks, s.Nodes)
		}
		s.GPUsPerNode = per
		s.FromHeader = true
		for _, n := range pids {
			if n > 1 && s.Launch != collective.Graph {
				s.Launch = collective.SingleProcess // -g N or -t N: several GPUs per process
			}
		}
		if given := layout.disagrees(s.Nodes, s.GPUsPerNode); given != "" {
			return s, fileErr(name, 0, "%s, but the header's device lines show %d node(s) × %d GPUs", given, s.Nodes, s.GPUsPerNode)
		}
	} else {
		if layout.Nodes < 1 || layout.GPUsPerNode < 1 {
			return s, fileErr(name, 0, "the output has no device lines (\"#  Rank  0 Group  0 Pid … on HOST device 0 …\"), so the nodes and GPUs per node must be given (--nodes and --gpus-per-node, or the layout file)")
		}
		s.Nodes, s.GPUsPerNode = layout.Nodes, layout.GPUsPerNode
		s.Ranks = s.Nodes * s.GPUsPerNode
		if nThread*nGpus > 1 && s.Launch != collective.Graph {
			s.Launch = collective.SingleProcess
		}
	}
	if layout.Launch != "" {
		l, err := collective.ParseLaunch(layout.Launch)
		if err != nil {
			return s, fileErr(name, 0, "layout launch: %v", err)
		}
		s.Launch = l
	}
	if layout.Algo != "" {
		a, err := ncclAlgo(layout.Algo)
		if err != nil {
			return s, fileErr(name, 0, "layout algo: %v", err)
		}
		s.Algo = a
	}

	// The operation.
	if layout.Op != "" {
		op, err := collective.ParseOp(layout.Op)
		if err != nil {
			return s, fileErr(name, 0, "layout op: %v", err)
		}
		if s.Bench != "" && benchOps[s.Bench] != op {
			return s, fileErr(name, 0, "the layout says %s, the file names %s", op, s.Bench)
		}
		s.Op = op
	} else if op, ok := benchOps[s.Bench]; ok {
		s.Op = op
	} else if s.Bench != "" {
		return s, fileErr(name, 0, "%s: a test stepcost does not model (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast and reduce are)", s.Bench)
	} else {
		return s, fileErr(name, 0, "the output does not name its test (all_reduce_perf, …): give it with the layout's op")
	}
	if s.Bench == "" {
		for b, op := range benchOps {
			if op == s.Op {
				s.Bench = b
			}
		}
	}
	return s, checkSweep(&s, false)
}

// disagrees names the node count and GPUs per node the layout gives that are
// not nodes and perNode, the file's ("nodes 4 was given"); "" when they agree
// or are not given. A value not given is not named (it read "4 node(s) × 0 GPUs").
func (l Layout) disagrees(nodes, perNode int) string {
	var given []string
	if l.Nodes > 0 && l.Nodes != nodes {
		given = append(given, fmt.Sprintf("nodes %d", l.Nodes))
	}
	if l.GPUsPerNode > 0 && l.GPUsPerNode != perNode {
		given = append(given, fmt.Sprintf("gpus_per_node %d", l.GPUsPerNode))
	}
	switch len(given) {
	case 0:
		return ""
	case 1:
		return given[0] + " was given"
	}
	return strings.Join(given, " and ") + " were given"
}

// parseRow reads one data row; its columns must agree with each other.
// It returns the row's data type and reduction besides. wrongCounts says the
// table's header names the check's column "#wrong", a count.
func parseRow(t string, wrongCounts bool) (p Point, typ, redop string, err error) {
	m := rowRe.FindStringSubmatch(t)
	if m == nil {
		f := strings.Fields(t)
		if col, v, ok := badColumn(f); ok {
			return Point{}, "", "", fmt.Errorf("%s %q is not a non-negative number: %q", col, v, clip(t))
		}
		return Point{}, "", "", fmt.Errorf("cut short or not an nccl-tests row (%d columns; a row has size, count, type, redop, [root,] then time, algbw, busbw, #wrong out-of-place and in-place): %q", len(f), clip(t))
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	p = Point{Bytes: num(m[1]), TimeUs: num(m[6]), AlgBW: num(m[7]), BusBW: num(m[8])}
	typ, redop = m[3], m[4]
	if m[10] != "" {
		p.InPlaceUs = num(m[10])
	}
	// #wrong (nccl-tests 2.10 and later) counts the elements the data check found
	// wrong; "N/A" when the check was off (-c 0). The older "error" column is the
	// largest relative error, printed with an exponent ("2e-07"), which rounding
	// makes non-zero in healthy runs: only its closing "Out of bounds values" line
	// tells a corrupt run there.
	// Under a "#wrong" header the column is a count whatever its form: "%6g"
	// prints a million wrong elements as "1e+06" (src/util.cu).
	for _, w := range []struct{ col, v string }{{"#wrong", m[9]}, {"in-place #wrong", m[13]}} {
		if n, err := strconv.ParseFloat(w.v, 64); (digitsRe.MatchString(w.v) || wrongCounts && err == nil) && n != 0 {
			return p, typ, redop, fmt.Errorf("%s %s: the data check found wrong results, so the times are not a healthy fabric's (rerun it): %q", w.col, w.v, clip(t))
		}
	}
	if !(p.Bytes > 0) || !(p.TimeUs > 0) {
		return p, typ, redop, fmt.Errorf("size %s and time %s must be positive", m[1], m[6])
	}
	// algbw is size / time (GB/s = B/µs / 1e3), printed with two decimals.
	want := p.Bytes / p.TimeUs / 1e3
	if math.Abs(p.AlgBW-want) > 0.011+0.02*want {
		return p, typ, redop, fmt.Errorf("algbw %s GB/s is not size / time = %.3g GB/s: the columns are not nccl-tests'", m[7], want)
	}
	return p, typ, redop, nil
}

// rowColumns are the measured columns of a row after size, count, type, redop
// and (all but all-gather's and all-to-all's kind) root: out-of-place, then
// in-place.
var rowColumns = []string{"time", "algbw", "busbw", "#wrong", "in-place time", "in-place algbw", "in-place busbw", "#wrong"}

// badColumn is the first size, count or measured column of a row with every
// column (8 or 12 without root, 9 or 13 with; a whole fifth column of 8 or 12
// is a root, the row cut short) that is not a non-negative number,
// with its value: a negative time, or a NaN or inf an interrupted run printed.
func badColumn(f []string) (col, v string, ok bool) {
	lead := 0
	switch len(f) {
	case 8, 12:
		// Unless the fifth column is a whole number, a root: then it is a row
		// with root whose last columns are missing.
		if intRe.MatchString(f[4]) {
			return "", "", false
		}
		lead = 4
	case 9, 13:
		lead = 5
	default:
		return "", "", false
	}
	if !digitsRe.MatchString(f[0]) {
		return "size", f[0], true
	}
	if !digitsRe.MatchString(f[1]) {
		return "count", f[1], true
	}
	for i, v := range f[lead:] {
		if rowColumns[i] != "#wrong" && !numOnlyRe.MatchString(v) {
			return rowColumns[i], v, true
		}
	}
	return "", "", false
}

// checkSweep checks the rows against each other and the operation: sizes grow, and
// busbw ÷ algbw is nccl-tests' bus factor for the operation and rank count (a
// mismatch means the header or the layout misstates the ranks or the test).
// rows says the sweep came from measurement rows, whose refusals name the
// row's field at fault (size_bytes, busbw_GBps) as every other refusal of a row
// does; an nccl-tests output has no such names.
func checkSweep(s *Sweep, rows bool) error {
	sizeField, busField := "", ""
	if rows {
		sizeField, busField = "size_bytes: ", "busbw_GBps: "
	}
	f := s.Op.BusFactor(s.Ranks)
	for i, p := range s.Points {
		if i > 0 && p.Bytes < s.Points[i-1].Bytes && s.Points[0].Bytes != p.Bytes {
			// A second sweep in the same file (OCI's runs print two) is fine; a
			// shuffled one is not nccl-tests'.
			if !slices.ContainsFunc(s.Points[:i], func(q Point) bool { return q.Bytes == p.Bytes }) {
				return fileErr(s.File, p.Line, "%ssize %v after %v: nccl-tests sweeps sizes upwards", sizeField, p.Bytes, s.Points[i-1].Bytes)
			}
		}
		if p.AlgBW >= 1 && p.BusBW > 0 {
			got := p.BusBW / p.AlgBW
			if math.Abs(got-f) > 0.02*f+0.02/p.AlgBW*f+0.01 {
				return fileErr(s.File, p.Line, "%sbusbw/algbw is %.3f, but %s on %d ranks has a bus factor of %.3f: the ranks (%d node(s) × %d) or the test are not what the file ran", busField, got, s.Op, s.Ranks, f, s.Nodes, s.GPUsPerNode)
			}
		}
	}
	// Rows where out-of-place took over three times in-place (or the reverse) are
	// one-off stalls, not the fabric: set aside, and said.
	kept := s.Points[:0]
	for _, p := range s.Points {
		if p.InPlaceUs > 0 && (p.TimeUs > 3*p.InPlaceUs || p.InPlaceUs > 3*p.TimeUs) {
			s.Notes = append(s.Notes, fmt.Sprintf("line %d (%s): out-of-place %.4g µs and in-place %.4g µs differ more than 3×, a one-off stall; set aside", p.Line, FormatBytes(p.Bytes), p.TimeUs, p.InPlaceUs))
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		// Nothing left to fit: a sweep without a point is not a measurement.
		return fileErr(s.File, 0, "every row's out-of-place and in-place times differ more than 3× (a one-off stall each): no row left to read; rerun the test")
	}
	s.Points = kept
	return nil
}

func validText(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || r < 0x20 && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// FormatBytes prints a size in binary units (8 B, 64 KiB, 1 GiB).
func FormatBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b == math.Trunc(b) {
		return fmt.Sprintf("%d %s", int64(b), units[i])
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}
