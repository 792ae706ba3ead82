# Shell functions for the end-to-end tests (sourced).

# near_native REPLAY_JSON NATIVE_KB SHARE: the replay's predicted peak RSS is within SHARE (0.1:
# 10 %) of the program's native VmHWM. Prints both, the ratio, and the replay's and the traced
# program's anonymous peaks; returns 1 (with a FAIL line) when it is not.
near_native() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
j, native, share = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3])
predicted = j["predicted_peak_rss_kb"]
print("native VmHWM %d KiB, predicted peak RSS %d KiB (%.3f); replay anon %d KiB, traced anon %d KiB" %
      (native, predicted, predicted / native, j["max_anon_rss_kb"], j["source_peak_anon_kb"]))
if not (1 - share) * native <= predicted <= (1 + share) * native:
    print("FAIL: predicted %d KiB against native %d KiB" % (predicted, native))
    sys.exit(1)
PY
}
