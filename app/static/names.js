// The rule name lists on the retainer form: "Add another" copies the empty row, "Remove" drops one.
// Without this script the form still works: it always ends with an empty row, and an emptied box is dropped.
(function () {
  function renumber(list) {
    var what = list.closest("[data-names]").getAttribute("data-names");
    list.querySelectorAll(".name-row").forEach(function (row, i) {
      var input = row.querySelector("input"), label = row.querySelector("label");
      var id = input.id.replace(/-\d+$/, "") + "-" + (i + 1);
      input.id = id;
      label.setAttribute("for", id);
      label.textContent = what.charAt(0).toUpperCase() + what.slice(1) + " " + (i + 1);
      row.querySelector(".remove-name").setAttribute("aria-label", "Remove " + what + " " + (i + 1));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-names]").forEach(function (box) {
      var list = box.querySelector(".name-rows");
      box.querySelectorAll("button[hidden]").forEach(function (b) { b.hidden = false; });
      box.querySelector(".add-name").addEventListener("click", function () {
        var rows = list.querySelectorAll(".name-row"), last = rows[rows.length - 1];
        var input = last.querySelector("input");
        if (input.value.trim() === "") { input.focus(); return; }
        var row = last.cloneNode(true);
        row.querySelector("input").value = "";
        list.appendChild(row);
        renumber(list);
        row.querySelector("input").focus();
      });
      list.addEventListener("click", function (event) {
        var button = event.target.closest(".remove-name");
        if (!button) return;
        var row = button.closest(".name-row");
        if (list.querySelectorAll(".name-row").length > 1) { row.remove(); } else { row.querySelector("input").value = ""; }
        renumber(list);
        list.querySelector(".name-row input").focus();
      });
    });
  });
})();
