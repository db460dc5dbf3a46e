/**
 * The help of `pdlink bench`, apart from the command so the command file holds what it does: every
 * option it reads, and the profile mode (`--profile`) that measures one P and one D for the SLA planner.
 */

export const BENCH_HELP = `Usage: pdlink bench --base-url URL [options]

Sends a workload to an OpenAI-compatible endpoint (pdlink's proxy, vLLM, any engine), streaming,
and reports TTFT, inter-token latency, TPOT, end to end, throughput and goodput. Writes
<out>.json (schema pdlink-bench-report, version 3) and <out>.html (charts, opens offline).
Progress goes to stderr; Ctrl-C stops and writes the report of what was measured.

Target:
  --base-url URL            e.g. http://127.0.0.1:1025 (required)
  --endpoint KIND           completions | chat (default completions)
  --model NAME              model name (default: the first of GET <base-url>/v1/models)
  --request-timeout-s S     bound on one request (default 300)

Workload (a trace when --trace is given, else synthetic):
  --trace FILE              Mooncake-format JSONL (timestamp, input_length, output_length, hash_ids)
  --time-scale X            arrival times × X (default 1; 0.1 replays ten times faster)
  --length-scale X          prompt lengths and block size × X (default 1)
  --output-scale X          completion lengths × X (default: the length scale)
  --rate R                  synthetic: Poisson arrivals per second (default 1)
  --input-len DIST          synthetic prompt tokens: N, uniform:MIN:MAX, exponential:MEAN,
                            lognormal:MEAN:CV (default 512)
  --output-len DIST         synthetic completion tokens (default 64)
  --prefix-share F          synthetic: share of each prompt's blocks from a shared prefix (default 0.5)
  --prefix-groups N         synthetic: number of shared prefixes (default 8)
  --block-tokens N          synthetic: tokens per hash block (default 512)
  --seed N                  synthetic: random seed (default 1)
  --then-rate R, --then-input-len DIST, --then-output-len DIST
                            synthetic: a second phase from --shift-at on, with its own rate and
                            lengths (each defaults to the first phase's): a workload that shifts
  --shift-at F              synthetic: share of the requests after which the second phase starts
                            (default 0.5 when a --then-* option is given)
  --tenants LIST            NAME:CLASS:RATE,... : each request is sent as a tenant with a priority
                            class (pdlink's x-pdlink-tenant and x-pdlink-priority headers) and the
                            report summarises each tenant; synthetic: each tenant its own Poisson
                            stream at RATE per second (--rate is then unused); trace: requests dealt
                            to the tenants in proportion to RATE

Runs and bounds:
  --concurrency LIST        closed-loop sweep, e.g. 1,2,4,8 (default: open-loop replay at the arrival times)
  --max-requests N          requests per run (default: the whole trace; 200 synthetic)
  --duration-s S            time bound per run (default 600)

Report:
  --slo-ttft-ms MS          goodput counts requests with TTFT ≤ MS
  --slo-tpot-ms MS          …and TPOT ≤ MS
  --out PREFIX              output files PREFIX.json and PREFIX.html (default pdlink-bench-<time>)
  --controller-url URL      a pdlink controller's management URL: each run keeps the cluster's roles
                            as they change (GET /v1/cluster) and the moves between roles; the page
                            draws the serving prefill and decode instances over the run
  --chart-library WHERE     inline (default: the page carries uPlot) | beside (the page references
                            uPlot's two files, written once into its directory: for many reports)
  -h, --help                show this help

Profile mode (for the controller's SLA planner, planner.sla.profile), against a Coordinator in front
of one prefill and one decode instance: --profile OUT.json [--base-url, --model, --endpoint,
--request-timeout-s as above]
  --input-len N             prefill sweep: prompt tokens of each request (one output token) (default 2048)
  --rates LIST              prefill sweep: offered requests per second, open loop (default 1,2,4,8)
  --decode-input-len N      decode sweep: prompt tokens of each request (default 64)
  --output-len N            decode sweep: output tokens of each request (default 256)
  --concurrency LIST        decode sweep: clients, closed loop (default 1,2,4,8,16,32)
  --max-requests N          requests per point (default 50)
  --duration-s S            time bound per point (default 120)
  --seed N                  random seed of the arrivals (default 1)
Writes OUT.json (schema pdlink-pd-profile, version 1): each rate's TTFT p50/p90 and each level's
TPOT p50/p90 and output tokens/s; the planner reads what one instance serves at its targets.
`;
