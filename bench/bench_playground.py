"""Steps per second of the in-page playground (attnmarl.notebook.playground) in headless Chromium: m = 3 beside m = 16.

One step of the page is what the reader watches between two frames: the world step of every team that
plays (at m = 3 and m = 16: the entity team and the greedy assignment's), every agent's next action
(the entity actor's forward pass for all m agents, the assignment for the other team) and the
drawing (the arena, the returns, the alpha row), with the layout it forces. Painting is not counted:
headless Chromium without a GPU paints off screen. Two playgrounds, one per m, sit on one offline
page; blocks of steps alternate between them (side by side in one run) and the median block is
reported, with what the world steps (physics) and the entity team's decisions (all agents' forward
passes) take alone, and what the drawing adds: a step with the drawing minus the same step without
it, block by block.

Two more playgrounds run the sequence task (chapter 13's Multi-Agent Transformer beside the entity actor and the
greedy assignment) at the same m: a step there, and MAT's decisions alone (its token layer and encoder, then one
decoder pass per agent, each computing one new position), beside the entity actor's.

    .venv/bin/python bench/bench_playground.py [--blocks N] [--steps N]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from attnmarl.notebook.playground import playground_html

CHROMIUM = "/usr/bin/chromium"
MS = (3, 16)
TARGET_MS = 16.0
"""The budget of one step: 60 steps per second, one per frame of a 60 Hz display."""

_TIME = """([index, steps, part]) => {
  const pg = document.querySelectorAll('.attnmarl-playground')[index].playground;
  const parts = {
    step: () => { pg.tick(); pg.svg.getBoundingClientRect(); },
    physics: () => Object.values(pg.worlds).forEach((w) => w.copy().step(pg.next.entity.actions)),
    entity: () => attnmarlPlayground.teamActions('entity', pg.worlds.entity, pg.weights, null),
    mat: () => attnmarlPlayground.teamActions('mat', pg.worlds.mat, pg.weights, null),
    undrawn: () => {
      const draw = pg.draw;
      pg.draw = () => {}; pg.tick(); pg.draw = draw; pg.svg.getBoundingClientRect();
    },
  };
  const start = performance.now();
  for (let k = 0; k < steps; k++) parts[part]();
  return (performance.now() - start) / steps;
}"""


def median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=15, help="blocks of steps per m and part")
    parser.add_argument("--steps", type=int, default=20, help="steps per block")
    args = parser.parse_args()
    if not shutil.which(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is missing: install Debian's chromium (make test does it)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        path = Path(folder) / "playground.html"
        path.write_text("<!doctype html><meta charset='utf-8'><body>"
                        + "".join(playground_html(m=m, seed=0) for m in MS)
                        + "".join(playground_html(m=m, seed=0, tasks=("sequence",)) for m in MS) + "</body>")
        print(f"playground HTML: {len(playground_html().encode()) / 1e3:.0f} kB per copy, weights included")
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
        page.goto(path.as_uri())
        page.wait_for_selector(".attnmarl-playground .pg-arena circle")
        page.evaluate("() => document.querySelectorAll('.attnmarl-playground').forEach((root) => {"
                      " root.playground.touched = true; root.playground.setRunning(false); })")
        parts = ("step", "physics", "entity", "undrawn")
        sequence_parts = ("step", "mat", "entity")
        plan = [(index, m, "", part) for index, m in enumerate(MS) for part in parts]
        plan += [(len(MS) + index, m, "sequence ", part) for index, m in enumerate(MS) for part in sequence_parts]
        times: dict[tuple[int, str], list[float]] = {(m, task + part): [] for _, m, task, part in plan}
        for index, _, _, part in plan:  # warm-up: the JIT compiles the hot loops
            page.evaluate(_TIME, [index, args.steps, part])
        for _ in range(args.blocks):
            for index, m, task, part in plan:
                times[(m, task + part)].append(page.evaluate(_TIME, [index, args.steps, part]))
        version = browser.version
        browser.close()
    print(f"headless Chromium {version}, median of {args.blocks} blocks of {args.steps} steps, in ms per step")
    print(f"{'m':>3} {'step':>7} {'steps/s':>8} {'physics':>8} {'entity actor':>13} {'drawing':>8} "
          f"{'within ' + str(TARGET_MS) + ' ms':>14}")
    for m in MS:
        t = {part: median(times[(m, part)]) for part in parts}
        drawing = median([a - b for a, b in zip(times[(m, "step")], times[(m, "undrawn")])])
        print(f"{m:>3} {t['step']:>7.2f} {1000 / t['step']:>8.0f} {t['physics']:>8.3f} {t['entity']:>13.3f} "
              f"{drawing:>8.2f} {'yes' if t['step'] <= TARGET_MS else 'NO':>14}")
    ratio = median(times[(16, "step")]) / median(times[(3, "step")])
    print(f"a step at m = 16 takes {ratio:.1f}x the time of a step at m = 3")
    print(f"sequence task: {'m':>3} {'step':>7} {'steps/s':>8} {'MAT, all agents':>16} {'entity actor':>13} "
          f"{'MAT / entity':>13}")
    for m in MS:
        t = {part: median(times[(m, "sequence " + part)]) for part in sequence_parts}
        print(f"{'':15s}{m:>3} {t['step']:>7.2f} {1000 / t['step']:>8.0f} {t['mat']:>16.3f} {t['entity']:>13.3f} "
              f"{t['mat'] / t['entity']:>13.1f}")


if __name__ == "__main__":
    main()
