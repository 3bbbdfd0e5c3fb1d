// "Copy link" buttons on the consultant's retainer page (the client's page has no script at all).
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button) return;
  var input = document.querySelector(button.getAttribute("data-copy"));
  if (!input) return;
  input.select();
  if (navigator.clipboard) {
    navigator.clipboard.writeText(input.value).then(function () { button.textContent = "Copied"; });
  } else {
    document.execCommand("copy");
    button.textContent = "Copied";
  }
});
