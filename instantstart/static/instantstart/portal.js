// The portal's own behaviour that is not htmx: the narrow-screen menu button. A static file because
// the Content Security Policy allows no inline script.
document.addEventListener("click", (event) => {
  const toggle = event.target.closest(".nav-toggle");
  if (toggle) {
    toggle.setAttribute("aria-expanded", document.body.classList.toggle("nav-open"));
  }
});
