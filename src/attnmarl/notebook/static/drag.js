/* Direct manipulation, shared by the playground (playground.js) and the in-page explorers (live.js): a pointer
 * drag that starts on an entity moves it in world coordinates, and the arrow keys move a focused one.
 *
 * A drawing that can be dragged in is an <svg> whose data-square attribute ("left,top,size,lim") names the square
 * of its own units that shows the world's [-lim, lim]^2 (attnmarl/notebook/svg.py and explorer.js write it for
 * their points and arena panels; the playground's arena writes its own). The page may scale the drawing (its
 * viewBox stays), so pointer positions go through the drawing's screen transform.
 *
 * Touch: a finger that starts on an entity drags it (entities are touch-action: none in explorer.css and
 * playground.css, and their touchstart is cancelled); a finger that starts on the empty arena is left to the
 * browser, which scrolls the page. */
if (typeof window.attnmarlDrag === "undefined") {
  (function () {
    // The world position (x, y) under the pointer of event e, over the drawing svg (see the header).
    function toWorld(svg, e) {
      const [left, top, size, lim] = svg.dataset.square.split(",").map(Number);
      const at = new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
      return [((at.x - left) / size) * 2 * lim - lim, lim - ((at.y - top) / size) * 2 * lim];
    }

    /* Dragging inside the element box (it stays in the page while the drawings in it are redrawn). On pointerdown
     * over a drawing, grab(target, [x, y]) returns the world position of what it grabbed, or null for nothing;
     * each pointer move then calls move([x, y]) with the entity where the pointer holds it (the offset between
     * the pointer and the entity's centre kept), and pointerup or pointercancel (the browser took the touch to
     * scroll) calls end(). A touch grabs only if it starts on an element matching the selector `handles`. */
    function attach(box, { handles, grab, move, end }) {
      let drag = null;
      const drawings = () => Array.from(box.querySelectorAll("svg[data-square]"));
      box.addEventListener("pointerdown", (e) => {
        const svg = e.target.closest("svg[data-square]");
        if (!svg || e.button > 0 || (e.pointerType === "touch" && !e.target.closest(handles))) return;
        const at = toWorld(svg, e), held = grab(e.target, at);
        if (!held) return;
        drag = { drawing: drawings().indexOf(svg), dx: held[0] - at[0], dy: held[1] - at[1] };
        box.setPointerCapture(e.pointerId);
        e.preventDefault(); // no text selection, no focus jump while dragging
      });
      box.addEventListener("pointermove", (e) => {
        if (!drag) return;
        const [x, y] = toWorld(drawings()[drag.drawing] || box, e); // the drawing may have been redrawn
        move([x + drag.dx, y + drag.dy]);
      });
      // touch-action: none is not honoured on SVG shapes everywhere: a touch that starts on a handle also cancels
      // its own scrolling (the pointer events go on); any other touch is left to the browser
      box.addEventListener("touchstart", (e) => { if (e.target.closest(handles)) e.preventDefault(); }, { passive: false });
      const stop = () => {
        if (!drag) return;
        drag = null;
        if (end) end();
      };
      box.addEventListener("pointerup", stop);
      box.addEventListener("pointercancel", stop);
    }

    const ARROWS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };

    // The world displacement an arrow key asks for: `step` along its direction (five steps with Shift); null for
    // any other key.
    function arrow(e, step) {
      const d = ARROWS[e.key], k = e.shiftKey ? 5 * step : step;
      return d ? [d[0] * k, d[1] * k] : null;
    }

    // Enter and Space act on a focused entity (select it, hide it: what each widget offers).
    const activates = (e) => e.key === "Enter" || e.key === " ";

    // Keep keyboard focus on the element of `key` (a selector) in `box` when a redraw replaces the focused element.
    function refocus(box, key) {
      const el = key && box.querySelector(key);
      if (el && document.activeElement !== el) el.focus({ preventScroll: true });
    }

    window.attnmarlDrag = { toWorld, attach, arrow, activates, refocus };
  })();
}
