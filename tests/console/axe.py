"""The console's accessibility checks in a real browser: axe-core's audit (npm axe-core, pinned
in tests/package.json) against WCAG 2.0/2.1/2.2 levels A and AA, and a keyboard walk.

The audit fails on any violation, listing each rule with its help URL and the elements it
found. The walk presses Tab from the top of a page and checks that the focus visits the
page's focusable elements in document order (no tabindex reordering, nothing skipped or
unreachable) and that each one shows a focus outline of at least 2 px whose colour has 3:1
contrast against what lies around it (WCAG 2.4.7 and 1.4.11).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.npm_packages import node_modules

TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa")
# an arrow function of the tags, run in the page once axe.min.js is there
RUN = (
    "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})"
)


def axe_script() -> Path:
    return node_modules() / "axe-core" / "axe.min.js"


def violations_text(where: str, violations: list[dict[str, Any]]) -> str:
    lines = [f"{len(violations)} accessibility violation(s) on {where}:"]
    for rule in violations:
        lines.append(f"- {rule['id']} ({rule['impact']}): {rule['help']} <{rule['helpUrl']}>")
        for node in rule["nodes"][:8]:
            lines.append(f"    {' '.join(map(str, node['target']))}: {node['failureSummary']}")
            lines.append(f"      {node['html'][:200]}")
        if len(rule["nodes"]) > 8:
            lines.append(f"    and {len(rule['nodes']) - 8} more")
    return "\n".join(lines)


def audit(page: Any, where: str) -> None:
    """axe-core on a Playwright page as it is now; fails on any violation. The page's context
    needs bypass_csp: the console's policy refuses the inline script add_script_tag makes."""
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=axe_script())
    result = page.evaluate(RUN, list(TAGS))
    violations = result["violations"]
    assert not violations, violations_text(where, violations)


def audit_over_cdp(browser: Any, where: str) -> None:
    """The same audit in the CDP test's browser (tests/console/cdp.py): the script is evaluated
    through DevTools, which the page's policy does not govern."""
    if not browser.evaluate("typeof window.axe === 'object'"):
        browser.evaluate(axe_script().read_text())
    result = browser.evaluate_async(f"({RUN})({json.dumps(list(TAGS))})")
    violations = result["violations"]
    assert not violations, violations_text(where, violations)


# The elements Tab should reach, in document order, and what the focused one looks like.
TABBABLE = """() => {
  const wanted = 'a[href], button, input, select, textarea, summary, [tabindex]';
  const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  return [...document.querySelectorAll(wanted)]
    .filter(e => !e.disabled && e.tabIndex >= 0 && e.type !== 'hidden' && shown(e))
    .map(describe);
}"""
DESCRIBE = """const describe = e => {
  const tag = e.tagName.toLowerCase();
  const text = (e.innerText || e.value || e.getAttribute('aria-label') || e.name || '').trim();
  return tag + ' ' + JSON.stringify(text.slice(0, 40)) + (e.id ? '#' + e.id : '');
};"""
FOCUS = """() => {
  const e = document.activeElement;
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const channel = c => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  let around = e.parentElement, background = [255, 255, 255];
  for (; around; around = around.parentElement) {
    const c = rgb(getComputedStyle(around).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0)) { background = c.slice(0, 3); break; }
  }
  const style = getComputedStyle(e);
  const ring = luminance(rgb(style.outlineColor)), ground = luminance(background);
  const [hi, lo] = ring > ground ? [ring, ground] : [ground, ring];
  const box = e.getBoundingClientRect();
  return {
    element: describe(e),
    outline: style.outlineStyle !== 'none' ? parseFloat(style.outlineWidth) : 0,
    contrast: (hi + 0.05) / (lo + 0.05),
    inView: box.bottom > 0 && box.top < innerHeight && box.right > 0 && box.left < innerWidth,
  };
}"""


def _js(function: str) -> str:
    return f"(() => {{ {DESCRIBE} return ({function})(); }})()"


def keyboard_walk(page: Any, where: str, stops: int = 30) -> list[str]:
    """Tab through a freshly loaded page (at most `stops` times): the focus must follow
    document order and always be visible. Returns the elements visited."""
    expected: list[str] = page.evaluate(_js(TABBABLE))
    visited: list[str] = []
    for wanted in expected[:stops]:
        page.keyboard.press("Tab")
        focus = page.evaluate(_js(FOCUS))
        visited.append(focus["element"])
        assert focus["element"] == wanted, f"{where}: Tab went to {focus['element']} after " \
            f"{visited[:-1]}, not to {wanted}"  # fmt: skip
        assert focus["outline"] >= 2, f"{where}: no visible focus outline on {wanted}"
        assert focus["contrast"] >= 3, (
            f"{where}: the focus outline of {wanted} has contrast {focus['contrast']:.2f}:1"
        )
        assert focus["inView"], f"{where}: {wanted} has the focus out of view"
    return visited
