/* The help texts of mtrace and its commands, in one table: --help prints a text as it stands, and
 * mtrace-man (cli/help_man.c) turns the same text into the command's man page at build time.
 *
 * A text's shape, which the man page generator reads:
 *   - the usage lines first ("usage: ..." and its continuations), then an empty line;
 *   - paragraphs of prose, not indented, separated by empty lines;
 *   - sections, each a heading line of its own ("Options:", "Output:", "Definitions:",
 *     "Environment:", "Exit status:", "Example:", "Commands:", "Verdicts:", "Files:");
 *   - in a section, an entry begins at two spaces of indent: its term, then two spaces or more and its
 *     description; lines indented deeper carry on the entry; prose lines have no indent;
 *   - under "Example:", lines are shown as they stand. */
#include <string.h>

#include "cli_options.h"
#include "convert_cli.h"
#include "help_text.h"
#include "mtrace/replay.h"

#define MT_STR_(x) #x
#define MT_STR(x) MT_STR_(x)

/* The exit status rule of the commands that read files and write results. */
#define EXIT_COMMON                                                                                                    \
    "Exit status:\n"                                                                                                   \
    "  0  success\n"                                                                                                   \
    "  1  an input could not be read (a message names the file and the byte offset) or an output could\n"              \
    "     not be written; nothing partial is left under the output's name\n"                                           \
    "  2  usage error: an unknown option, a missing argument or a bad value (the message names it)\n"

/* The status of info and dump on a trace cut short. */
#define EXIT_CUT                                                                                                       \
    "  3  the trace was cut short after it was written (chunks or packed frames its header counts are\n"               \
    "     missing, or it ends inside one), or a process is still recording into it: what is there is\n"                \
    "     shown, and a line on stderr says it is not the whole\n"

/* The verdict rule, as replay, compare and sweep apply it (analysis/spread.c). */
#define VERDICTS                                                                                                       \
    "Verdicts:\n"                                                                                                      \
    "Verdicts (faster/slower, less/more memory) compare the medians of CPU time (user+sys of the replay)\n"            \
    "and of peak RSS, and say \"within noise\" when the two spreads overlap (min..max, or q1..q3 from 4\n"             \
    "runs) or the medians are less than 1 % apart; with one run on either side they add \"(1 run: noise\n"             \
    "unknown)\". A row whose settings the allocator did not take (no mallopt, or it refused them: the\n"               \
    "result's settings_not_applied) is its default again: \"not applied\", no verdict.\n"

static const char help_mtrace[] =
    "usage: mtrace COMMAND [ARGS...]\n"
    "       mtrace --help | --version | help [COMMAND]\n"
    "\n"
    "Traces the malloc API calls of a program (record), summarizes and reports them (info, dump,\n"
    "report, diff, plot), turns a trace into a workload (convert) and replays it against allocators\n"
    "(replay, compare, sweep). 'mtrace COMMAND --help', or 'mtrace help COMMAND', describes a command.\n"
    "\n"
    "Options:\n"
    "  -h, --help     this text, on stdout\n"
    "  -V, --version  the version of mtrace\n"
    "\n"
    "Commands:\n"
    "%COMMANDS%"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  an input could not be read, or an output not written\n"
    "  2  usage error (an unknown command or option, a bad value)\n"
    "  3  done, but not whole: a trace cut short or still being written (info, dump), replayed calls\n"
    "     that failed (replay)\n"
    "Every command states its own in its --help; record passes the traced program's status through.\n"
    "\n"
    "Example:\n"
    "  mtrace record --stacks 8 -o app.mtr -- ./app\n"
    "  mtrace report app.mtr\n"
    "  mtrace convert app.mtr -o app.wl\n"
    "  mtrace replay app.wl --allocator glibc --allocator jemalloc\n";

static const char help_record[] =
    "usage: mtrace record [-o FILE|DIR/] [--force] [--stacks N] [--paused] [--rss-ms N] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with the tracer (libmtrace.so, preloaded) and passes its exit status through. Every\n"
    "process of CMD gets a file of its own: a forked child, an exec'd image. Options end at CMD's name.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  the trace; %p in FILE is the process id. Default mtrace.%p.mtr, in the current\n"
    "                     directory for every process of CMD, even one that changes directory\n"
    "  -o, --output DIR/  every process's trace in DIR, as mtrace.%p.mtr (for mtrace report DIR and\n"
    "                     mtrace export DIR); DIR/ is made if missing, an existing DIR needs no slash\n"
    "  -f, --force        replace FILE if it exists (without %p in it); remove the traces already in\n"
    "                     DIR (without it, a DIR that holds traces is refused)\n"
    "  -s, --stacks N     record N frames of each allocation's stack (0 to 64, default 0): callsites\n"
    "                     and caller trees in mtrace report\n"
    "  -p, --paused       start with tracing paused: the program starts it with mtrace_start()\n"
    "                     (mtrace.h)\n"
    "  -r, --rss-ms N     sample the process's RSS at the first call after every N ms (0 to\n"
    "                     1000000000, default 10; 0: never)\n"
    "  -h, --help         this text\n"
    "\n"
    "Output:\n"
    "One line on stderr per trace written: \"mtrace: wrote FILE\".\n"
    "\n"
    "Environment:\n"
    "  MTRACE_SHIM         the recorder to preload (default: libmtrace.so next to this program, then\n"
    "                      the installed one)\n"
    "  MTRACE_MAX_SIZE     the largest trace in MiB (default 65536): then the trace is truncated\n"
    "  MTRACE_FOLLOW_FORK  0: do not trace forked children (default 1)\n"
    "  MTRACE_QUIET        1: the recorder prints nothing on stderr\n"
    "The options above set MTRACE_OUT, MTRACE_STACKS, MTRACE_RSS_MS and MTRACE_PAUSED, which a\n"
    "program run with LD_PRELOAD=libmtrace.so reads directly.\n"
    "\n"
    "Exit status:\n"
    "  N    CMD's own exit status; 128+S when CMD was killed by signal S\n"
    "  127  CMD could not be run\n"
    "  2    usage error, FILE exists or DIR holds traces (without --force), the directory cannot be\n"
    "       made or written, or libmtrace.so not found: CMD is not run\n"
    "\n"
    "Example:\n"
    "  mtrace record --stacks 8 -o app.mtr -- ./app --its-options\n"
    "  mtrace record -o traces/ -- make    (one trace per process in traces/; mtrace report traces/)\n";

static const char help_info[] =
    "usage: mtrace info [--json] [-j N] FILE\n"
    "\n"
    "Summarizes a trace (raw or packed) or a workload: its header, threads, records, calls per\n"
    "function, time span and state, without printing the records.\n"
    "\n"
    "Options:\n"
    "  --json        one JSON object (keys as the text's lines, in bytes and seconds)\n"
    "  -j, --jobs N  threads reading a trace's chunks, 1 to 1024 (default: the CPUs online); the\n"
    "                output is the same, byte for byte, with any N\n"
    "  -h, --help    this text\n"
    "\n"
    "Output:\n"
    "  file        the file, raw or packed, its size in bytes and format version\n"
    "  process     the traced process's pid and its parent's\n"
    "  command     the traced command line; then exe, glibc, allocator, host and the settings\n"
    "              (MALLOC_*, GLIBC_TUNABLES, MTRACE_*) the program ran with\n"
    "  clock       the recorder's time source, how often calls read it (per-call, or every K calls\n"
    "              while the process had one thread), and what one read of it and of\n"
    "              CLOCK_MONOTONIC cost in ns, measured when tracing started\n"
    "  records     records: calls (malloc API) and events (threads, fork, exec, RSS samples, stacks)\n"
    "  size        bytes of trace per call\n"
    "  time span   seconds from the first record to the last\n"
    "  state       complete; ended at an exec, and the trace the program went on in (the same name\n"
    "              with .PID or .PID.N appended; JSON continued_in); not finished (the process\n"
    "              was killed or crashed, or left by a bare exit_group system call, as Go programs\n"
    "              do); being written (a process is still recording into it:\n"
    "              exit 3; JSON being_written); truncated file (cut short after it was written:\n"
    "              exit 3);\n"
    "              \"truncated\" and why when the recorder had to stop writing\n"
    "  lost calls  calls the recorder could not write (shown when there were any)\n"
    "  bypassed    the program's malloc was another object's, found before libmtrace.so (LD_PRELOAD\n"
    "              order), or its executable's own (an allocator linked in; JSON\n"
    "              bypassed_by_executable): its calls are not in the trace\n"
    "  calls       the calls per function; events: the events per kind\n"
    "A workload gives threads, ops, slots (peak live blocks), peak live bytes and when, sync points,\n"
    "duration, and the repairs the converter made. JSON: bytes_requested is as mtrace report --help\n"
    "defines it; failed_calls are the calls that returned NULL (or an error).\n"
    "\n" EXIT_COMMON EXIT_CUT "\n"
    "Example:\n"
    "  mtrace info --json app.mtr\n";

static const char help_dump[] =
    "usage: mtrace dump FILE\n"
    "\n"
    "Prints a trace (raw or packed) one record per line, or a workload one op per line, thread by\n"
    "thread.\n"
    "\n"
    "Options:\n"
    "  -h, --help  this text\n"
    "\n"
    "Output:\n"
    "A trace's line: thread (the recorder's number, from 1), seconds since the trace started, the\n"
    "function or event, its arguments (sizes in bytes, addresses in hexadecimal; COUNTxSIZE for calloc\n"
    "and reallocarray), then \"= RESULT\" (the block and its usable size in bytes, NULL, or an error)\n"
    "and flags (mmapped, heap_grew, stack=ID); an RSS sample's fields are rss_kb, vm_kb and file_kb in\n"
    "KiB and mono_ns. A workload's line: thread (the same numbers as the trace's dump), seconds, the\n"
    "op, #SLOT (with the size in bytes of the block freed in parentheses), its size in bytes, or for\n"
    "events their fields (rss_kb and vm_kb in KiB; a wait's thread=N by the same numbers).\n"
    "\n" EXIT_COMMON EXIT_CUT "\n"
    "Example:\n"
    "  mtrace dump app.mtr | grep -c ' malloc '\n";

static const char help_pack[] =
    "usage: mtrace pack TRACE [-o OUT] [--level N] [--plain] [--force] [-j N]\n"
    "\n"
    "Compresses a trace. Every mtrace command reads packed traces as it reads raw ones. Chunks are\n"
    "modeled into streams, then compressed with zstd.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT  the packed trace (default: TRACE with .mtz for .mtr, else TRACE.mtz)\n"
    "  -l, --level N     zstd's level, 1 to 22 (default 9)\n"
    "  --plain           zstd alone, without the model: a trace that older mtrace reads\n"
    "  -f, --force       replace OUT if it exists\n"
    "  -j, --jobs N      threads compressing chunks, 1 to 1024 (default: the CPUs online); OUT is the\n"
    "                    same bytes with any N\n"
    "  -h, --help        this text\n"
    "\n"
    "Output:\n"
    "One line on stderr: both files' sizes in bytes and the ratio.\n"
    "\n" EXIT_COMMON "OUT existing without --force is a usage error too.\n"
    "\n"
    "Example:\n"
    "  mtrace pack app.mtr --level 19\n";

static const char help_report[] =
    "usage: mtrace report [--json|--csv] [--top N] [--folded FILE] [--flamegraph FILE.svg]\n"
    "                     [--flame-weight bytes|calls|leaked|peak] [--callsites-csv FILE]\n"
    "                     [--skip-frames PATTERN,...] [--no-auto-skip] [--tree-depth N]\n"
    "                     [--suppress FILE] [--temporary thread|heaptrack] [-j N]\n"
    "                     [--html OUT.html] TRACE [RESULT.json...]\n"
    "       mtrace report [--json] [options] TRACE|DIR TRACE|DIR...\n"
    "\n"
    "Calls per function (like strace -c), peak live bytes and when, leaks, temporary allocations,\n"
    "size and lifetime histograms, threads, and with stacks (mtrace record --stacks N) the top\n"
    "callsites with file:line and the caller trees: allocating functions with their callers\n"
    "(bottom-up) and the callers down to them (top-down), with calls, bytes, bytes at the peak and\n"
    "leaks at each level.\n"
    "\n"
    "Several traces (a process tree's files: mtrace record writes one per process, or a directory\n"
    "of them, its trace files by name) give each one's report in turn, then what adds up across\n"
    "them: the processes and threads (each once across its execs), the traces that ended at an exec\n"
    "apart from those not finished, calls, bytes and failures per function, leaks, temporaries, the\n"
    "live peaks' largest and their sum (the processes' peaks, not at one time), and with stacks the\n"
    "top callsites by bytes and by leaks, merged across the processes by function, file:line and\n"
    "module (by module and offset without a symbol), never by address, with the number of traces at\n"
    "each. With --json: one object, \"reports\" (each as one trace's --json) and \"total\"\n"
    "(doc/report.md).\n"
    "Text or JSON only. A trace that cannot be read is said on stderr (file and offset) and left out:\n"
    "the others are reported, the total (\"2 of 3 traces\") names it, in JSON under\n"
    "\"failed_traces\", and the exit status is 1.\n"
    "\n"
    "Options:\n"
    "  --json                the report as one JSON object (bytes in bytes, times in seconds)\n"
    "  --csv                 the calls table as CSV: function, calls, share_pct, bytes_requested,\n"
    "                        failures\n"
    "  --top N               rows of each callsite table and roots of each caller tree (default 10),\n"
    "                        children shown per node (default 5); 0: the defaults\n"
    "  --folded FILE         folded stacks (one line a stack, weight last) for flamegraph.pl, from\n"
    "                        main or the thread's start routine, as the top-down tree; of several\n"
    "                        traces, every trace's stacks, each under a first frame naming its\n"
    "                        process, 'COMMAND (pid N)' (one tower per process; sed 's/^[^;]*;//'\n"
    "                        merges them)\n"
    "  --flamegraph FILE.svg  a flame graph of the stacks (of several traces, as --folded's)\n"
    "  --flame-weight W      what the flame graph's widths count: bytes (default), calls, leaked, peak\n"
    "  --callsites-csv FILE  every callsite: function, file, line, module, offset (without a symbol: in\n"
    "                        its module, hex), calls, bytes, leaked_blocks, leaked_bytes, peak_bytes;\n"
    "                        of several traces, the merged callsites, with\n"
    "                        traces, leaking_traces; these three need the trace's stacks (record\n"
    "                        --stacks N): of a trace without them, exit 1 and no file; of several\n"
    "                        traces, each file is written only when every trace was read\n"
    "  --skip-frames LIST    allocation wrappers to see through (fnmatch patterns, comma-separated, e.g.\n"
    "                        'xmalloc,z*alloc*'); a function that only allocates for several callers is\n"
    "                        skipped too, unless --no-auto-skip; the output lists every frame skipped\n"
    "                        and why\n"
    "  --no-auto-skip        skip only the frames --skip-frames names\n"
    "  --tree-depth N        levels of the caller trees shown, 1 to 64 (default 5)\n"
    "  --suppress FILE       leaks whose stack has a function matching a pattern of FILE (fnmatch, one\n"
    "                        a line, '#' comments, a 'leak:' prefix allowed) are counted apart and not\n"
    "                        listed (doc/report.md)\n"
    "  --temporary RULE      thread (default): freed by its thread before that thread allocates again;\n"
    "                        heaptrack: freed right after it was made, no free in between (heaptrack's)\n"
    "  --html OUT.html       one page with the report, its figures and the replay results given\n"
    "  -j, --jobs N          threads reading the trace, 1 to 1024 (default: the CPUs online): one\n"
    "                        decodes and merges the threads' records while this one computes, N - 2\n"
    "                        more decode; the report is the same, byte for byte, with any N\n"
    "  -h, --help            this text\n"
    "\n"
    "Definitions:\n"
    "  bytes requested  the sizes asked for (COUNT*SIZE for calloc and reallocarray; the new size for\n"
    "                   realloc; the alignment not counted), added up over the calls that returned a\n"
    "                   block. A call that failed counts in failures only.\n"
    "  peak live        the most bytes requested and not yet freed at one time, in how many blocks,\n"
    "                   and when (seconds since the trace started)\n"
    "  leaked           the blocks allocated while tracing and still live when the trace ended, and\n"
    "                   their bytes requested. Blocks allocated before tracing began are not counted\n"
    "                   (their frees are \"unknown frees\").\n"
    "  temporary        an allocation that its own thread frees (with free) before that thread\n"
    "                   allocates again; its bytes are the bytes requested. A buffer that could\n"
    "                   live on the stack, or be reused. --temporary heaptrack: heaptrack's rule.\n"
    "  leak kinds       with stacks: growing (its leaked blocks were made in 3 of the run's 4\n"
    "                   quarters, the last one included), at exit (the others), at stop (the trace\n"
    "                   did not end)\n"
    "  realloc growth   new size - old size where a realloc grew its block; shrink, the reverse\n"
    "\n"
    "Output:\n"
    "  % calls          the function's share of all calls, in percent\n"
    "  calls            the calls to the function\n"
    "  bytes requested  as defined above, in B, KiB, MiB, GiB (powers of 1024)\n"
    "  failures         calls that returned NULL or an error (realloc to size 0 excepted)\n"
    "  thread table     the thread's number, its tid, calls, allocations, bytes requested and\n"
    "                   temporaries\n"
    "  histograms       allocations per power-of-two size range (requested bytes), and blocks per\n"
    "                   power-of-two lifetime range (allocation to free)\n"
    "  top callsites    by calls, bytes requested, bytes live at the peak and leaked bytes: function\n"
    "                   and file:line, or module+0xOFFSET without a symbol\n"
    "\n" EXIT_COMMON "\n"
    "Example:\n"
    "  mtrace record --stacks 8 -o app.mtr -- ./app\n"
    "  mtrace report --top 20 --skip-frames 'xmalloc' app.mtr\n";

static const char help_diff[] =
    "usage: mtrace diff [--json|--html OUT.html] [--top N] [--skip-frames PATTERN,...] [--no-auto-skip]\n"
    "                   BEFORE AFTER\n"
    "\n"
    "The change in calls, bytes requested, bytes at the peak and leaked bytes per allocating function\n"
    "between two traces recorded with --stacks (a run before and after a change), biggest movers\n"
    "first; wrappers are skipped as by mtrace report, the same ones in both traces.\n"
    "\n"
    "Options:\n"
    "  --json               one JSON object\n"
    "  --html OUT.html      one page with the table\n"
    "  --top N              rows shown (default 20 in text, all in JSON and HTML)\n"
    "  --skip-frames LIST   allocation wrappers to see through, as mtrace report --skip-frames\n"
    "  --no-auto-skip       skip only the frames --skip-frames names\n"
    "  -h, --help           this text\n"
    "\n"
    "Output:\n"
    "Per allocating function: calls, bytes requested, peak bytes and leaked bytes in BEFORE, in AFTER,\n"
    "and the change (AFTER less BEFORE). Bytes as mtrace report --help defines them.\n"
    "\n" EXIT_COMMON "\n"
    "Example:\n"
    "  mtrace diff before.mtr after.mtr --top 10\n";

static const char help_export[] =
    "usage: mtrace export TRACE|DIR... -o DIR [--trace-id N] [--skip-frames PATTERN,...] [--no-auto-skip]\n"
    "                     [--force] [-j N]\n"
    "\n"
    "Writes the trace as ClickHouse tables in RowBinary, one file each in DIR (made if missing):\n"
    "mtrace_records (every call, in time order), mtrace_stacks (symbolized), mtrace_threads, mtrace_rss\n"
    "and mtrace_traces (the header), as TABLE.rowbinary. doc/export.md has the CREATE TABLE statements\n"
    "and the queries that give mtrace report's figures. Several traces, or a directory of them (the\n"
    "traces a process tree wrote, in name order), go into the same tables one after another, each\n"
    "trace's rows under its own trace id: one load per table for all of them.\n"
    "\n"
    "Options:\n"
    "  -o, --output DIR    where the tables go\n"
    "  --trace-id N        the key of this trace's rows, 1 to 2^64-1 (default: a hash of its pid, start\n"
    "                      and host); one trace only\n"
    "  --skip-frames LIST  allocation wrappers to see through, as mtrace report --skip-frames\n"
    "  --no-auto-skip      skip only the frames --skip-frames names\n"
    "  --force             replace the files of an earlier export in DIR\n"
    "  -j, --jobs N        threads reading a trace, 1 to 1024 (default: the CPUs online): one decodes\n"
    "                      and merges its threads' records while this one writes the rows, N - 2 more\n"
    "                      decode; the tables are the same, byte for byte, with any N\n"
    "  -h, --help          this text\n"
    "\n"
    "Output:\n"
    "One line on stderr per trace: the call records, stacks, threads and RSS samples exported, and the\n"
    "trace id; with several, a last line of the total. Every file is written under a temporary name\n"
    "and renamed at the end: a failed export leaves none. The tables take far more room than the\n"
    "trace: each call is a row of 148 bytes in mtrace_records, where a raw trace takes 5 to 12 bytes a\n"
    "call (a python trace of 70.6 MB: 1.68 GB); make sure DIR's disk has the room.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  a trace could not be read (none of the traces is then exported), or a table not written; a\n"
    "     damaged trace: every record before the damage is exported, and the message says where it\n"
    "     stopped\n"
    "  2  usage error, or files of an earlier export in DIR (without --force)\n"
    "\n"
    "Example:\n"
    "  mtrace export app.mtr -o t\n"
    "  mtrace export traces/ -o t      (every trace in traces/, e.g. mtrace record -o traces/ ...)\n"
    "  clickhouse-client --query \"INSERT INTO mtrace_records FORMAT RowBinary\" <t/mtrace_records.rowbinary\n";

static const char help_replay[] =
    "usage: mtrace replay WORKLOAD [--allocator NAME|PATH.so]... [--mallopt NAME=VALUE]...\n"
    "                     [--tunables GLIBC_TUNABLES] [--json FILE] [--rss-series FILE]\n"
    "                     [--timing recorded|asap] [--touch auto|pages|ends|none] [--repeat N] [--quiet]\n"
    "\n"
    "Replays WORKLOAD once per allocator (default glibc), each in a process of its own (mtrace-sim\n"
    "with the allocator preloaded); several allocators, or --repeat, end with a comparison table.\n"
    "\n"
    "Options:\n"
    "  --allocator A      glibc, jemalloc, tcmalloc, mimalloc or a library's path; repeatable\n"
    "  --mallopt N=V      a mallopt setting for every replay: mmap_threshold, trim_threshold, top_pad,\n"
    "                     mmap_max, arena_max, arena_test, mxfast, perturb (or M_* or a number);\n"
    "                     V takes k and m suffixes; repeatable\n"
    "  --tunables T       GLIBC_TUNABLES for the replays\n"
    "  --json FILE        the result as JSON; with several allocators FILE gets the allocator's name\n"
    "                     before its extension, with --repeat the run's number (FILE.NAME.1.json)\n"
    "  --rss-series FILE  RSS over the replay, one sample a line, tab-separated: t_s (seconds), rss_kb,\n"
    "                     vmsize_kb, ideal_kb, source_rss_kb (the traced program's RSS), in KiB\n"
    "  --timing T         recorded (default): no op before its time in the trace, so that an allocator\n"
    "                     that gives memory back on a timer sees the program's pace; asap: as fast as\n"
    "                     the waits between threads allow\n"
    "  --touch MODE       how a replayed block is written: auto (default), pages, ends, none (see\n"
    "                     mtrace-sim --help)\n"
    "  --repeat N         every allocator N times (1 to " MT_STR(
        MT_REPLAY_MAX_REPEAT) "), in rounds: each allocator once, then\n"
                              "                     again\n"
                              "  --quiet            no summaries, only the table and the files\n"
                              "  -h, --help         this text\n"
                              "\n"
                              "Output:\n"
                              "Per replay, mtrace-sim's summary (glibc trace_run's lines): cycles; usec wall time; usec of CPU\n"
                              "across the threads; Kb Max RSS (growth, then start -> max, in KiB); Kb Max Ideal RSS (the most\n"
                              "bytes live at once, KiB); then the average cycles per call of malloc, calloc, realloc and free.\n"
                              "The table gives per allocator the median of its runs of CPU time and wall time (ms) and peak RSS\n"
                              "(MiB), the % change against the first allocator, and with several runs their spread. Peak RSS is\n"
                              "the program's as predicted on that allocator: the replay's anonymous peak less its own\n"
                              "bookkeeping, plus the traced program's file-backed and shared pages (code, libraries, shared\n"
                              "memory) and its anonymous pages at its start (relocated data, static variables), which no\n"
                              "allocator changes, in place of the replay's own; the replay's own max RSS where the trace has no\n"
                              "RSS samples.\n"
                              "\n" VERDICTS "\n"
                              "Environment:\n"
                              "  GLIBC_TUNABLES  passed to the replays (--tunables replaces it)\n"
                              "\n"
                              "Exit status:\n"
                              "  0      every replay ran to its end, and every replayed call got its block\n"
                              "  1      the workload could not be read, or a replay failed: mtrace-sim's status (its message\n"
                              "         says why), 1 when it died of a signal\n"
                              "  2      usage error, or an allocator that cannot be loaded\n"
                              "  3      every replay ran, but calls failed in some (the allocator returned NULL where the traced\n"
                              "         call got a block; each summary says how many)\n"
                              "  128+N  interrupted by signal N; no result is written\n"
                              "\n"
                              "Example:\n"
                              "  mtrace replay app.wl --allocator glibc --allocator jemalloc --repeat 5 --json run.json\n";

static const char help_compare[] =
    "usage: mtrace compare [--csv|--json] [--recordings] RESULT.json...\n"
    "\n"
    "Replay results (mtrace replay --json, mtrace-sim --json) in one table, one row per allocator and\n"
    "settings: results of the same allocator, settings, workload, timing and touch are runs of one row\n"
    "(mtrace replay --repeat writes them).\n"
    "\n"
    "Options:\n"
    "  --csv         the table as CSV\n"
    "  --json        the table as JSON, with each row's files\n"
    "  --recordings  the workloads are recordings of one program: results that differ only by their\n"
    "                workload are runs of one row, whose spread then holds the program's own variation\n"
    "                from one recording to the next (a program whose threads share out work by their\n"
    "                speed allocates otherwise from run to run)\n"
    "  -h, --help    this text\n"
    "\n"
    "Output:\n"
    "A row's figures are the medians of its runs: wall and CPU time in ms, peak RSS MiB (peak_rss_mib:\n"
    "the program's, as predicted: predicted_peak_rss_kb, else max_rss_kb), with the %\n"
    "change against the first row's; the spreads follow when a row has several runs. growth MiB\n"
    "(rss_growth_mib): the replay's max RSS less its RSS at its start (its own code and libraries, not\n"
    "the program's); ideal MiB: the peak of live requested bytes, in whole pages; growth/ideal\n"
    "(rss_growth_over_ideal): the one over the other. --csv and --json\n"
    "also give: runs; cpu_ms, wall_ms, peak_rss_mib with _min, _q1, _q3, _max (the spread, same units);\n"
    "time_verdict (baseline, faster, slower, within noise, not applied), memory_verdict (baseline, less\n"
    "memory, more memory, within noise, not applied), noise_measured (both rows ran twice or more), recordings (the distinct\n"
    "workloads of a row's runs).\n"
    "\n" VERDICTS "\n" EXIT_COMMON "\n"
    "Example:\n"
    "  mtrace compare run.glibc.json run.jemalloc.json --csv\n";

static const char help_sweep[] =
    "usage: mtrace sweep WORKLOAD --mallopt NAME=V1,V2,... [--mallopt NAME=...] [--allocator NAME]...\n"
    "                    [-o DIR] [--timing recorded|asap] [--touch MODE] [--repeat N]\n"
    "\n"
    "Replays WORKLOAD for every combination of the settings (and allocators), prints a table, writes\n"
    "DIR/sweep.csv and DIR/sweep.png, and names the lowest-RSS and the fastest setting.\n"
    "\n"
    "Options:\n"
    "  --mallopt NAME=V1,V2,...  a setting and its values (k and m suffixes); up to 4 of them\n"
    "  --allocator NAME          as mtrace replay --allocator; repeatable (default glibc)\n"
    "  -o, --output DIR          where the files go (default sweep-out)\n"
    "  --timing T                recorded (default) or asap, as mtrace replay --timing\n"
    "  --touch MODE              how replayed blocks are written: auto, pages, ends or none, for every\n"
    "                            replay (see mtrace-sim --help)\n"
    "  --repeat N                every point N times (1 to " MT_STR(
        MT_REPLAY_MAX_REPEAT) ", default 1), in rounds (every\n"
                              "                            point once, then again); run K of point P writes DIR/run-P.K.json\n"
                              "                            (DIR/run-P.json with one run)\n"
                              "  -h, --help                this text\n"
                              "\n"
                              "Output:\n"
                              "The first rows are each allocator's default, replayed with no setting at all: the baseline\n"
                              "(glibc's mmap_threshold and trim_threshold: \"dynamic (default)\", glibc moving them as blocks\n"
                              "are freed until one is set). Every row's changes are against its allocator's baseline, in % of\n"
                              "the baseline's median: CPU time, wall time, and peak RSS in % of the baseline's peak RSS, the\n"
                              "program's peak as predicted (the replay's anonymous peak and the program's file pages).\n"
                              "Figures are medians, with their spread (min..max; q1..q3 from 4 runs). \"fastest\" and \"lowest\n"
                              "peak RSS\" are the lowest medians of CPU time and of peak RSS. \"growth MiB\" is the replay's\n"
                              "RSS growth (its max RSS less its RSS at its start: its own code, not the program's), and\n"
                              "\"grw/ideal\" that growth over the ideal (the peak of live requested bytes); not the peak RSS\n"
                              "over the ideal, which would count the program's code and libraries, unchanged by any allocator.\n"
                              "\n"
                              "Files:\n"
                              "  sweep.csv  the settings, then wall_ms, cpu_ms (medians, ms), peak_rss_mib (peak RSS),\n"
                              "             rss_growth_mib (the replay's max RSS less its RSS at its start, which is its own\n"
                              "             code, not the program's), ideal_mib (peak live bytes, in whole pages), MiB;\n"
                              "             rss_growth_over_ideal (rss_growth_mib over ideal_mib), runs, the spreads (_min,\n"
                              "             _q1, _q3, _max of cpu_ms, wall_ms, peak_rss_mib), cpu_change_pct, wall_change_pct,\n"
                              "             rss_change_pct_of_default_peak_rss, time_verdict, memory_verdict and noise_measured\n"
                              "             against the baseline\n"
                              "  sweep.png  peak RSS and CPU time (medians) along the first setting's values, bars for the\n"
                              "             runs' spread, the default's median as a dashed line; both y axes start at zero\n"
                              "\n" VERDICTS "\n" EXIT_COMMON
                              "  3  a replay's calls failed (the allocator returned NULL where the traced call got a block):\n"
                              "     the sweep stops there\n"
                              "  128+N  interrupted by signal N\n"
                              "\n"
                              "Example:\n"
                              "  mtrace sweep app.wl --mallopt mmap_threshold=64k,256k,1m --mallopt arena_max=1,8 --repeat 5\n";

static const char help_plot[] =
    "usage: mtrace plot -o OUT.png|OUT.svg [--kind live|sizes|rss|compare] INPUT...\n"
    "\n"
    "Draws a trace's or replays' figures with gnuplot, as PNG or SVG (from OUT's extension).\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT  the picture, .png or .svg\n"
    "  --kind K          for a TRACE: live (default: live bytes and the program's RSS at its RSS\n"
    "                    samples; with fewer than two samples, live bytes at its calls' times) or\n"
    "                    sizes (the size histogram, counts on a log scale); for RESULT.json...: rss\n"
    "                    (RSS against ideal RSS beside the traced program's RSS, against the share of\n"
    "                    the workload's ops done; the default when every result was recorded with\n"
    "                    --rss-series) or compare (wall time and peak RSS bars)\n"
    "  -h, --help        this text\n"
    "\n"
    "Output:\n"
    "Bytes in MiB, times in seconds. One line on stderr: \"mtrace: wrote OUT\".\n"
    "\n"
    "Files:\n"
    "  OUT       the picture\n"
    "  OUT.dat   beside it (OUT's extension replaced): the figures drawn, as gnuplot read them, to\n"
    "            plot again or inspect\n"
    "\n" EXIT_COMMON "A --kind that does not fit the input is a usage error too.\n"
    "\n"
    "Example:\n"
    "  mtrace plot -o live.svg app.mtr\n";

const mt_help_t mt_help_pages[] = {
    { "mtrace", "trace, report and replay the malloc API calls of a program", help_mtrace },
    { "record", "run a program under the tracer", help_record },
    { "info", "summarize a trace (--json for scripts)", help_info },
    { "dump", "print a trace one record per line", help_dump },
    { "pack", "compress a trace with zstd", help_pack },
    { "report", "calls, peak, leaks, temporaries, histograms, callsites", help_report },
    { "diff", "the change per allocating function between two traces, biggest movers first", help_diff },
    { "export", "write a trace as ClickHouse tables (doc/export.md)", help_export },
    { "convert", "turn a trace into a workload for replay (= trace2wl)", mt_convert_help },
    { "replay", "replay a workload against one or more allocators", help_replay },
    { "compare", "compare replay results (medians, % change and verdict against the first)", help_compare },
    { "sweep", "replay over a grid of mallopt settings and allocators", help_sweep },
    { "plot", "draw a trace's or replays' figures with gnuplot (PNG or SVG)", help_plot },
};
const size_t mt_help_count = sizeof mt_help_pages / sizeof mt_help_pages[0];

const mt_help_t *mt_help_find(const char *name)
{
    for (size_t i = 0; i < mt_help_count; i++)
        if (!strcmp(mt_help_pages[i].name, name))
            return &mt_help_pages[i];
    return NULL;
}

/* The text of a page, with mtrace's command list where it says %COMMANDS%. */
static void put_text(FILE *f, const char *text)
{
    static const char mark[] = "%COMMANDS%";
    const char *at = strstr(text, mark);
    if (!at) {
        fputs(text, f);
        return;
    }
    fwrite(text, 1, (size_t)(at - text), f);
    for (size_t i = 1; i < mt_help_count; i++)
        fprintf(f, "  %-8s %s\n", mt_help_pages[i].name, mt_help_pages[i].summary);
    fputs(at + sizeof mark - 1, f);
}

void mt_help_write(FILE *f, const char *name)
{
    const mt_help_t *h = mt_help_find(name);
    if (h)
        put_text(f, h->text);
}

int mt_help_print(const char *name)
{
    mt_help_write(stdout, name);
    return 0;
}

void mt_help_usage_write(const char *name)
{
    const mt_help_t *h = mt_help_find(name);
    char prog[64];
    snprintf(prog, sizeof prog, "mtrace%s%s", strcmp(name, "mtrace") ? " " : "", strcmp(name, "mtrace") ? name : "");
    mt_usage_error(prog, h ? h->text : "");
}
