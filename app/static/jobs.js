// The job page: poll the job's JSON status, move the bar, and open the result when it is done.
(function () {
  var box = document.getElementById("job");
  if (!box) return;
  var bar = document.getElementById("job-bar");
  var phase = document.getElementById("job-phase");
  var error = document.getElementById("job-error");
  var retry = document.getElementById("job-retry");
  var result = document.getElementById("job-result");
  var number = new Intl.NumberFormat();

  function show(s) {
    box.setAttribute("data-status", s.status);
    if (s.percent === null) { bar.removeAttribute("value"); } else { bar.value = s.percent; }
    if (s.status === "queued") phase.textContent = "Waiting for a worker…";
    else if (s.status === "running") phase.textContent = s.phase + (s.total ? " · " + number.format(s.done) + " of " + number.format(s.total) : "");
    else if (s.status === "done") phase.textContent = "Done.";
    else phase.textContent = "Failed.";
    error.hidden = !s.error;
    error.textContent = s.error || "";
    retry.hidden = s.status !== "failed";
    if (s.result_url) {
      result.hidden = false;
      result.querySelector("a").href = s.result_url;
      window.location.assign(s.result_url);
    }
  }

  function poll() {
    fetch(box.getAttribute("data-status-url"), {headers: {"Accept": "application/json"}, cache: "no-store"})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (s) {
        show(s);
        if (s.status === "queued" || s.status === "running") setTimeout(poll, 400);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }

  var status = box.getAttribute("data-status");
  if (status === "queued" || status === "running") poll();
})();
