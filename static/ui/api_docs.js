// /api/docs (templates/ninja/swagger.html): each operation's summary is a button that holds
// a deep link to the operation, a focusable element inside an interactive one (axe:
// nested-interactive). The button already opens the operation and the address follows it,
// so the inner link loses its href: it stays as text, in the button's name, unfocusable.
// Swagger UI draws operations as they are opened, so this runs on each change.

const root = document.getElementById("swagger-ui");

function unnest() {
  for (const link of root.querySelectorAll(".opblock-summary-control a[href]")) link.removeAttribute("href");
}

new MutationObserver(unnest).observe(root, { childList: true, subtree: true });
unnest();
