/* commands.c -- the commands of nsl and their options, declared once.
 *
 * The parser, `nsl COMMAND --help`, `nsl --help`, the usage errors and the
 * README's synopsis (`nsl --help-synopsis`) are all made from this table
 * (cli.c); nothing else lists a command or an option.
 *
 * To add a command: one entry in nsl__cli_commands, in the order nsl --help
 * shows them, with .module naming the Lua module whose main(opts) runs it
 * (opts.command, opts.traces, opts.rest, opts.program, opts.help and one
 * field per option given), or .run a C function (cli.h's nsl_cli_main,
 * reading options with nsl__cli_value).  To add an option: one line in the
 * command's group, or in a shared group (analysis_options) for every
 * command that lists that group in .options.  Then refresh the README with
 * scripts/readme-synopsis.sh build/nsl (tests/e2e/test_cli_table.sh checks
 * it).  An option's name is declared once per command: the same name in
 * two groups of one command is a mistake the test reports. */
#include "cli/cli.h"

/* The options of the commands that run analyses (run, info, profile). */
static const nsl_cli_option analysis_options[] = {
    {"--arg", NULL, NSL_CLI_LIST, "KEY=VALUE", "args", 0,
     "an argument of the analysis (nsl run NAME --help lists them)"},
    {"--out", NULL, NSL_CLI_ONE, "DIR", NULL, 0, "write every table as CSV, results.json and the figures under DIR"},
    {"--format", NULL, NSL_CLI_ONE, "text|csv|json|md|tex", NULL, NSL_CLI_CHOICES,
     "the tables on stdout as text (default), CSV, JSON, Markdown or LaTeX"},
    {"--fail-on", NULL, NSL_CLI_ONE, "info|warning|error", NULL, NSL_CLI_CHOICES,
     "exit 3 when a finding has this severity or worse"},
    {NULL}};

/* The options of every command that opens traces (a .nsys-rep input is
 * exported with nsys first). */
static const nsl_cli_option trace_options[] = {
    {"--nsys", NULL, NSL_CLI_ONE, "PATH", NULL, 0,
     "the nsys that exports .nsys-rep inputs (default: NSYS, PATH, then the install folders)"},
    {NULL}};

/* The selection of every command that analyses or shows traces: the
 * trace keeps only the reports named, and only the rows of the window and
 * the device, dropped where they are read (nsl.open_selected). */
static const nsl_cli_option select_options[] = {
    {"--report", NULL, NSL_CLI_LIST, "NAME|N", NULL, 0,
     "only this report of a bundle or of several traces: its name (as nsl info lists them) or 0-based index; "
     "repeat or comma-separate for several"},
    {"--from", NULL, NSL_CLI_ONE, "T|step:N", NULL, 0,
     "only the events that overlap the window from T (250us, 1.5ms, 2s: from the trace's first event) or from the "
     "start of step N (as iterations numbers them); events are kept whole, not clipped"},
    {"--to", NULL, NSL_CLI_ONE, "T|step:N", NULL, 0, "the window's end: a time, or the end of step N (default: the end)"},
    {"--device", NULL, NSL_CLI_ONE, "N", NULL, 0,
     "only the GPU work of device N (kernels, memory operations, syncs); host rows are kept"},
    {NULL}};

/* What every command that reads or writes traces takes. */
static const nsl_cli_option common_options[] = {
    {"--no-cache", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "neither read nor write nsl's columnar cache (also NSL_NO_CACHE=1)"},
    {"--quiet", "-q", NSL_CLI_FLAG, NULL, NULL, 0, "no progress line on stderr for long work"},
    {NULL}};

static const nsl_cli_option run_options[] = {
    {"--embed", NULL, NSL_CLI_FLAG, NULL, NULL, 0,
     "store the results in the bundle (one .zip) under analyses/NAME/"},
    {"--label", NULL, NSL_CLI_ONE, "A,B,...", NULL, 0, "the runs' labels, for compare (its --arg labels=)"},
    {NULL}};

/* What the commands that write a bundle (bundle, profile) put in it besides the reports. */
static const nsl_cli_option contents_options[] = {
    {"--meta", NULL, NSL_CLI_LIST, "FILE|DIR", NULL, 0, "metadata files stored under meta/ (folders are walked)"},
    {"--source", NULL, NSL_CLI_LIST, "FILE|DIR", NULL, 0, "source files stored under sources/ (folders are walked)"},
    {"--note", NULL, NSL_CLI_ONE, "TEXT", NULL, 0, "free text kept in the manifest"},
    {NULL}};

static const nsl_cli_option bundle_options[] = {
    {"--output", "-o", NSL_CLI_ONE, "OUT.zip", NULL, NSL_CLI_REQUIRED, "the bundle to write"},
    {"--rank", NULL, NSL_CLI_LIST, "N", NULL, 0,
     "the exports' ranks, one per export in order (default: a \"rank<N>\" in the file name)"},
    {"--keep-rep", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "store a .nsys-rep input too, beside its export under reports/"},
    {"--columns", NULL, NSL_CLI_FLAG, NULL, NULL, 0,
     "also store every table's columns, uncompressed and aligned, so nsl maps them from the zip without SQLite"},
    {"--allow-mixed-nsys", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "bundle exports made by different nsys releases"},
    {NULL}};

static const nsl_cli_option combine_options[] = {
    {"--output", "-o", NSL_CLI_ONE, "OUT.zip", NULL, NSL_CLI_REQUIRED, "the bundle to write"},
    {"--allow-mixed-commands", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "combine bundles of different profiled commands"},
    {"--allow-mixed-nsys", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "combine bundles made by different nsys releases"},
    {NULL}};

static const nsl_cli_option profile_options[] = {
    {"--analysis", NULL, NSL_CLI_LIST, "NAME", NULL, 0,
     "an analysis to run on the bundle; its results are stored in it under analyses/NAME/"},
    {"--output", "-o", NSL_CLI_ONE, "OUT.zip", NULL, 0, "the bundle to write (default nsl-profile-%h-%p.zip)"},
    {"--nsys", NULL, NSL_CLI_ONE, "PATH", NULL, 0, "the nsys program (default: nsys, found on PATH)"},
    {"--condition", NULL, NSL_CLI_ONE, "EXPR", NULL, 0, "profile only where the Lua expression EXPR holds"},
    {"--rank", NULL, NSL_CLI_ONE, "N", NULL, 0, "the rank of this process (default: from the environment)"},
    {"--xla-dump", NULL, NSL_CLI_LIST, "DIR", NULL, 0, "where XLA dumps its HLO; stored under meta/xla_dump/"},
    {"--no-rep", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "leave the .nsys-rep out of the bundle"},
    {"--notebook", NULL, NSL_CLI_LIST, "NB.md", NULL, 0,
     "a notebook (file or shipped name) rendered on the bundle and stored in it"},
    {NULL}};

static const nsl_cli_option notebook_options[] = {
    {"--output", "-o", NSL_CLI_ONE, "OUT.html|OUT.ipynb", NULL, NSL_CLI_REQUIRED,
     "where to write the report (.html or .ipynb)"},
    {"--stop-on-error", NULL, NSL_CLI_FLAG, NULL, NULL, 0,
     "stop at the first failing cell and exit 1 (by default the remaining cells still run and errors show in the "
     "report)"},
    {NULL}};

static const nsl_cli_option tui_options[] = {
    {"--no-color", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "draw without colour (also when NO_COLOR is set)"},
    {"--max-depth", NULL, NSL_CLI_ONE, "N", NULL, 0, "NVTX nesting rows shown per thread (default: all)"},
    {NULL}};

static const nsl_cli_option view_options[] = {
    {"--output", "-o", NSL_CLI_ONE, "OUT.html", NULL, NSL_CLI_REQUIRED, "the page to write"},
    {"--max-events", NULL, NSL_CLI_ONE, "N", NULL, 0, "events in the default detail window (100000)"},
    {"--bins", NULL, NSL_CLI_ONE, "N", NULL, 0, "bins of the coarsest level of detail (2000; each finer level 4x)"},
    {"--no-findings", NULL, NSL_CLI_FLAG, NULL, NULL, 0, "leave out the findings of diagnose (they cost a run of it)"},
    {NULL}};

const nsl_cli_command nsl__cli_commands[] = {
    {.name = "run",
     .args = "SCRIPT|NAME [TRACE...]",
     .min_args = 1,
     .missing = "which analysis?",
     .first = "script",
     .first_help = 1,
     .options = {analysis_options, run_options, select_options, trace_options, common_options},
     .summary = "run a shipped analysis (by name) or your own script",
     .description = "Runs a shipped analysis (by name: nsl list) or your own Lua script on the traces.",
     .epilog = "nsl run NAME --help prints the analysis's description and arguments.",
     .module = "nsl.engine.runner"},
    {.name = "list",
     .summary = "the shipped analyses",
     .description = "The shipped analyses, with what each does (nsl run NAME --help for one).",
     .module = "nsl.engine.runner"},
    {.name = "info",
     .args = "TRACE...",
     .min_args = 1,
     .missing = "no trace given",
     .options = {analysis_options, select_options, trace_options, common_options},
     .summary = "versions, time span, devices, processes, row counts",
     .description = "Versions, time span, devices, processes and the row count of every table (the same as nsl run "
                    "info).",
     .module = "nsl.engine.runner"},
    {.name = "repl",
     .args = "[TRACE...]",
     .options = {select_options, trace_options, common_options},
     .summary = "interactive Lua with `trace` loaded (also nsl TRACE... on a terminal)",
     .description = "Interactive Lua 5.4 with the nsl library; `trace` is the loaded trace.  Line editing, history "
                    "(~/.nsl_history, or $NSL_HISTORY) and Tab completion of globals, tables, columns and methods; "
                    ":help inside lists the commands.",
     .run = nsl__repl},
    {.name = "tui",
     .args = "TRACE...",
     .min_args = 1,
     .missing = "no trace given",
     .options = {tui_options, select_options, trace_options, common_options},
     .summary = "terminal timeline, event details, NVTX tree and findings",
     .description =
         "A terminal timeline of the traces (SQLite exports, bundles; several are stacked on their aligned "
         "clocks): one row per GPU stream (kernels, NCCL kernels, memcpy by direction, memset) and NVTX ranges "
         "per thread on a row per nesting level; the details of the selected event (its launching CUDA call, "
         "thread and NVTX stack, the gaps around it); the NVTX range tree with inclusive and exclusive GPU and "
         "CPU time; the findings of diagnose, each leading to its place.  `:` evaluates Lua against `trace`; `?` "
         "lists the keys.  Works in 80x24 and up, over ssh and in tmux (needs ncurses at build time).",
     .epilog = "Environment: NO_COLOR draws without colour; NSL_TUI_LOG=FILE appends the load and redraw timings "
               "to FILE; NSL_TUI_INFO=1 starts with the window in ns shown.",
     .module = "nsl.engine.cmd.tui"},
    {.name = "view",
     .args = "TRACE...",
     .min_args = 1,
     .missing = "no trace given",
     .options = {view_options, select_options, trace_options, common_options},
     .summary = "an interactive timeline in one self-contained HTML file",
     .description =
         "Writes an interactive timeline of the traces as one self-contained HTML file (no network access): a "
         "row per GPU stream (kernels, NCCL kernels, memcpy by direction, memset) and per thread's NVTX ranges "
         "(nested ranges in sub-rows); zoom (wheel, + and -), pan (drag, arrow keys), details on hover, search by "
         "name, the NVTX ranges enclosing a point (click) or a selection (shift-drag), and the findings of "
         "diagnose (click one to go to its place).  The whole trace is summarised per time bin and row (busy "
         "time and events); the events of a detail window are embedded one by one.",
     .module = "nsl.engine.cmd.view"},
    {.name = "bundle",
     .args = "EXPORT...",
     .min_args = 1,
     .missing = "no export given",
     .options = {bundle_options, contents_options, trace_options, common_options},
     .summary = "a bundle of exports, metadata and sources",
     .description = "Writes one bundle (archive-format/) holding the exports under reports/, the --meta files under "
                    "meta/ and the --source files under sources/ (folders are walked; hidden entries and "
                    "__pycache__ are skipped).  The manifest records what the exports say: nsys and schema "
                    "versions, hosts, session starts, GPUs, and the profiled command line when the export has it.  "
                    "An EXPORT may be an Nsight Systems report (.nsys-rep): it is exported with `nsys export "
                    "--type=sqlite` into nsl's cache folder and the export is stored; --keep-rep stores the report "
                    "too.",
     .module = "nsl.engine.cmd.bundle"},
    {.name = "combine",
     .args = "IN.zip...",
     .min_args = 1,
     .missing = "no bundle given",
     .options = {combine_options, common_options},
     .summary = "per-rank bundles merged into one",
     .description = "Merges bundles (one per rank or process) into one.  Identical members are stored once; a name "
                    "that clashes with other content is renamed (a report of rank R becomes "
                    "reports/<stem>.rank<R>.sqlite).  Refused, naming both inputs: different profiled commands, "
                    "nsys versions of different releases, a rank or a report present in two inputs, the output "
                    "being an input.",
     .module = "nsl.engine.cmd.combine"},
    {.name = "profile",
     .passthrough = "nsys profile options",
     .program = "COMMAND...",
     .options = {profile_options, contents_options, analysis_options, common_options},
     .summary = "nsys profile, export, bundle and analyse in one go",
     .description =
         "Runs COMMAND under `nsys profile` (default options --trace=cuda,nvtx,osrt,cublas,cudnn "
         "--cuda-graph-trace=node; an option you give replaces its default), exports the report to SQLite and "
         "writes one bundle to OUT.zip with:\n"
         "  reports/   the SQLite export, and the .nsys-rep unless --no-rep\n"
         "  meta/      environment.txt (variables whose names hold TOKEN, SECRET, PASSWORD,\n"
         "             PASSWD, KEY or CREDENTIAL left out), nvidia-smi.txt (`nvidia-smi -q`, when\n"
         "             present), nsys-export.log, the --meta files, XLA dumps (xla_dump/)\n"
         "  sources/   the --source files (folders walked; hidden entries skipped)\n"
         "Each --analysis then runs on the bundle and its results are stored in it under analyses/NAME/ (--arg "
         "KEY=VALUE goes to the analyses that declare KEY).",
     .epilog =
         "OUT may hold %h (host), %p (nsl's pid), %r (rank), %q{VAR} (an environment variable) and %%.  The rank "
         "is --rank, else RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID from the environment.\n"
         "\n"
         "--xla-dump DIR adds --xla_dump_to=DIR --xla_dump_hlo_as_proto to XLA_FLAGS (unless XLA_FLAGS names a "
         "dump folder already) and stores DIR's files under meta/xla_dump/.\n"
         "\n"
         "--notebook NB.md (or the name of a shipped notebook) runs the notebook on the bundle and stores the "
         "page in it as analyses/notebook-NAME/NAME.html.\n"
         "\n"
         "--condition EXPR profiles only where EXPR is true; elsewhere COMMAND runs unprofiled.  EXPR is a Lua "
         "expression over the environment: a bare NAME is the variable's value (a number when it looks like one, "
         "nil when unset), env.NAME its text, rank the rank (as above); != is accepted for ~=.  Examples:\n"
         "  --condition 'LOCAL_RANK == 0'      --condition 'env.OMPI_COMM_WORLD_RANK == \"0\"'\n"
         "  --condition 'rank == nil or rank % 8 == 0'\n"
         "\n"
         "Work happens in a temporary folder beside OUT (or in $TMPDIR); only the finished bundle reaches OUT, "
         "and it is written even when COMMAND fails.  The exit code is COMMAND's (128 + N when signal N ended "
         "it); when COMMAND succeeded, 1 if nsys, the export, the bundle or an analysis failed, 3 for a finding "
         "at or above --fail-on.",
     .module = "nsl.engine.cmd.profile"},
    {.name = "cache",
     .args = "[list|clear]",
     .first = "action",
     .summary = "the columnar cache of loaded traces and the exports of .nsys-rep reports",
     .description = "list shows each entry of nsl's cache (columns of loaded traces, exports of .nsys-rep reports), "
                    "its size, last use and input; clear removes them all.  The folder is $NSL_CACHE_DIR, else "
                    "$XDG_CACHE_HOME/nsl, else ~/.cache/nsl; NSL_CACHE_MAX bounds its size (e.g. 8G; least "
                    "recently used entries go first); --no-cache or NSL_NO_CACHE=1 leaves it alone.",
     .run = nsl__cli_cache},
    {.name = "notebook",
     .args = "NOTEBOOK.md|NAME [TRACE...]",
     .min_args = 1,
     .missing = "no notebook given",
     .options = {notebook_options, select_options, trace_options, common_options},
     .summary = "run a literate analysis (Markdown with Lua cells) into a report",
     .description = "Runs the notebook's Lua cells in order on the traces and writes the rendered report: one "
                    "self-contained HTML file, or a Jupyter notebook (.ipynb) with the outputs filled in.  NAME is "
                    "a shipped notebook (analysis, compare).",
     .module = "nsl.engine.cmd.notebook"},
    {NULL}};

const char nsl__cli_about[] =
    "Analyse NVIDIA Nsight Systems profiles: SQLite exports (nsys export --type sqlite)\n"
    "and nsl bundles (.zip).";

const char nsl__cli_exit_codes[] =
    "exit codes: 0 success, 1 error (bad input, failing script), 2 usage,\n"
    "            3 a finding at or above --fail-on; profile: the command's when it failed";
