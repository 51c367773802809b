// The Advanced features form sends only what the user changed: a toggle whose state, or a setting
// whose value, differs from what the page showed (data-initial). Loaded with the panel; one listener.
(function () {
  if (window.__featuresPanel) { return; }
  window.__featuresPanel = true;
  document.body.addEventListener("htmx:configRequest", function (event) {
    var form = event.target;
    if (!form || form.id !== "features-form") { return; }
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) { if (key !== "csrfmiddlewaretoken") { delete params[key]; } });
    form.querySelectorAll("[data-initial]").forEach(function (input) {
      if (input.disabled) { return; }
      if (input.type === "checkbox") {
        if (input.checked !== (input.dataset.initial === "on")) { params[input.dataset.field] = input.checked ? "on" : "off"; }
      } else if (input.value !== input.dataset.initial) {
        params[input.dataset.field] = input.value;
      }
    });
  });
})();
