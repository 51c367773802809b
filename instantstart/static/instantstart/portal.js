// The portal's own behaviour that is not htmx. A static file because the Content Security Policy
// allows no inline script.

// The narrow-screen menu button.
document.addEventListener("click", (event) => {
  const toggle = event.target.closest(".nav-toggle");
  if (toggle) {
    toggle.setAttribute("aria-expanded", document.body.classList.toggle("nav-open"));
  }
});

// What someone is typing survives the swaps they did not ask for: a poll (a busy groups table every
// 2 s) or the open cluster tab's reload when an operation ends (cluster-settled) replaces fields they
// may be editing (a group's count, the add-group form). The fields they changed and have not sent, and
// the one with the focus, get their values, focus and caret back in the new content (the same field of
// the same form); untouched fields show what the server sent. A swap they asked for (a submit, a click)
// shows the server's answer as it is. The focus comes back only with its caret or selection: a number
// field has no selection to read, and focused again without it, a selected "2" that the next key was to
// replace would become "22".
const FIELDS = "input:not([type=hidden]):not([type=submit]):not([type=button]), select, textarea";
const CHOOSES = new Set(["checkbox", "radio"]);

function changed(field) {
  if (CHOOSES.has(field.type)) return field.checked !== field.defaultChecked;
  if (field.tagName === "SELECT") return [...field.options].some((o) => o.selected !== o.defaultSelected);
  return field.value !== field.defaultValue;
}

function fieldKey(field) {
  const form = field.form ? field.form.getAttribute("action") || field.form.id : "";
  const name = field.id || field.name + (field.type === "radio" ? `=${field.value}` : "");
  return `${form}|${name}`;
}

function unasked(detail) {
  const cause = detail.requestConfig && detail.requestConfig.triggeringEvent;
  return !cause || cause.type === "cluster-settled";
}

const edits = new WeakMap(); // request -> the edits to put back once its answer is swapped in

document.addEventListener("htmx:beforeSwap", (event) => {
  if (!unasked(event.detail) || !event.detail.target) return;
  const focused = document.activeElement;
  const kept = [...event.detail.target.querySelectorAll(FIELDS)]
    .filter((field) => field === focused || changed(field))
    .map((field) => {
      const caret = field === focused && typeof field.selectionStart === "number";
      return {
        key: fieldKey(field),
        changed: changed(field), // an untouched one, only focused, shows the server's value
        value: field.value,
        checked: field.checked,
        selected: field.tagName === "SELECT" ? [...field.selectedOptions].map((o) => o.value) : null,
        caret: caret ? [field.selectionStart, field.selectionEnd] : null,
      };
    });
  if (kept.length) edits.set(event.detail.xhr, kept);
});

document.addEventListener("htmx:afterSwap", (event) => {
  const kept = edits.get(event.detail.xhr);
  if (!kept) return;
  edits.delete(event.detail.xhr);
  const fields = new Map([...document.querySelectorAll(FIELDS)].map((field) => [fieldKey(field), field]));
  for (const edit of kept) {
    const field = fields.get(edit.key);
    if (!field) continue;
    if (edit.changed) {
      if (CHOOSES.has(field.type)) field.checked = edit.checked;
      else if (edit.selected) for (const option of field.options) option.selected = edit.selected.includes(option.value);
      else field.value = edit.value;
    }
    if (edit.caret) {
      field.focus();
      field.setSelectionRange(...edit.caret);
    }
  }
});
