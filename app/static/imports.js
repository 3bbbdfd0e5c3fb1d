// Drag-and-drop onto the upload form: the dropped file goes into the file input, then the form submits.
(function () {
  "use strict";
  var zone = document.querySelector("[data-dropzone]");
  if (!zone) { return; }
  var input = zone.querySelector("input[type=file]");
  var form = zone.closest("form");
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("dragging"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("dragging"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    if (!event.dataTransfer || !event.dataTransfer.files.length) { return; }
    input.files = event.dataTransfer.files;
    form.requestSubmit ? form.requestSubmit() : form.submit();
  });
})();
