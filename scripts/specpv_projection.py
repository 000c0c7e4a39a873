#!/usr/bin/env python3
"""SpecPV's decode speed at a given acceptance, from the step costs `drift bench` measured
(scripts/gpu_specpv_bench.sh writes one JSON per context). Random-weight checkpoints give SpecPV no
usable acceptance (its outputs part from plain decoding at once, so no draft matches them), so the
end-to-end figure combines what was measured in one run:
  - plain decoding: 1000 / TPOT of the warm "off" variant;
  - full-verification speculation: 1000 / TPOT of "oracle/full", and its acceptance length tau;
  - SpecPV: the verify forward's time with partial views and with full ones (the refreshes), the
    refresh's own cost (the plugin's refresh_ms_mean) and the rest of a step's host time (the
    specpv run's decode time less its forwards, refreshes and drafting, per step), scheduled as the
    plugin schedules them at
    that tau: partial steps while at most n_spec_tokens_buf tokens were committed since the last
    full verification (and fewer than full_refresh_interval partial steps), then one full step.
Projected SpecPV tokens/s = tokens committed / time over that schedule (draft time excluded on both
sides: the oracle's is ~0). Usage: specpv_projection.py BUFFER INTERVAL FILE.json ..."""
import json, sys


def schedule(tau, buffer, interval, tokens=100000):
    """Partial and full verify steps to commit `tokens` at `tau` tokens a step."""
    partial = full = 0
    committed = since_refresh = 0.0
    steps_since = 0
    refreshed = False
    while committed < tokens:
        if refreshed and since_refresh <= buffer and steps_since < interval:
            partial += 1
            steps_since += 1
        else:
            full += 1
            refreshed, since_refresh, steps_since = True, -tau, 0
        committed += tau
        since_refresh += tau
    return partial, full, committed


def main():
    buffer, interval = float(sys.argv[1]), int(sys.argv[2])
    print(f"{'context':>8} {'plain tok/s':>11} {'full-verify tok/s':>17} {'tau':>5} {'full step ms':>12} "
          f"{'partial step ms':>15} {'ratio':>6} {'refresh ms':>10} {'other ms':>8} {'read %':>6} {'specpv tok/s':>12} "
          f"{'vs full':>7} {'vs plain':>8}")
    for path in sys.argv[3:]:
        results = json.load(open(path))["results"]
        plain = [r for r in results if r["variant"] == "off"][-1]
        full = next(r for r in results if r["variant"].endswith("/full"))
        spec = [r for r in results if r["variant"] == "oracle"][-1]
        v = spec["verification"]
        tau = full["acceptance_length"]
        t_partial, t_full = v["partial_verify_step_ms"], v["full_verify_step_ms"]
        stats = spec["plugin_stats"]["specpv"]
        t_refresh = stats["refresh_ms_mean"]
        # What a step costs beyond its forward, refresh and drafting (choosing and checking the
        # views, building the forward, committing), from the specpv run's own decode time.
        steps = v["partial_verify_steps"] + v["full_verify_steps"]
        decode_ms = spec["mean_time_per_output_token_ms"] * (spec["output_tokens"] - 1)
        known_ms = (v["partial_verify_steps"] * t_partial + v["full_verify_steps"] * t_full +
                    stats["refreshes"] * t_refresh + spec["draft_ms_per_decode_step"] * steps)
        overhead = max(0.0, (decode_ms - known_ms) / steps) if steps else 0.0
        partial, fulls, tokens = schedule(tau, buffer, interval)
        specpv = 1000.0 * tokens / (partial * (t_partial + overhead) + fulls * (t_full + t_refresh + overhead))
        plain_tps = 1000.0 / plain["mean_time_per_output_token_ms"]
        full_tps = 1000.0 / full["mean_time_per_output_token_ms"]
        context = path.rsplit("_", 1)[-1].split(".")[0]
        print(f"{context:>8} {plain_tps:11.1f} {full_tps:17.1f} {tau:5.2f} {t_full:12.2f} {t_partial:15.2f} "
              f"{t_partial / t_full:6.2f} {t_refresh:10.2f} {overhead:8.2f} {100 * v['partial_attended_fraction']:6.1f} "
              f"{specpv:12.1f} {specpv / full_tps:6.2f}x {specpv / plain_tps:7.2f}x")


if __name__ == "__main__":
    main()
