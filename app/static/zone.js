// Sign-up: preselect the browser's time zone in the list; the person sees it and confirms (or
// changes) it by signing up. Without script the list keeps UTC selected, in plain view.
document.addEventListener("DOMContentLoaded", function () {
  var select = document.querySelector("select[data-browser-zone]");
  if (!select || select.getAttribute("data-browser-zone") !== "preselect") return;
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return; }
  for (var i = 0; i < select.options.length; i++) {
    if (select.options[i].value === zone) {
      select.value = zone;
      var hint = document.getElementById("zone-hint");
      if (hint) hint.textContent = "Taken from your browser: " + zone + ". Change it if you work elsewhere.";
      return;
    }
  }
});
