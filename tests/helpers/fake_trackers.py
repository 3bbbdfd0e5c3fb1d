"""Local HTTP servers that answer as Toggl Track, Clockify, Harvest and Kimai document their APIs.

Started on 127.0.0.1 in the test (or the benchmark); the objects come from ``tests/data/sync/`` (the
vendors' documented examples, see PROVENANCE.md) and the filters, pages and headers follow the same
references. A test changes the tracker's data through each fake's methods (add, edit, delete, stop a
timer) and can script answers (429 with Retry-After, 401), hold requests, and read what was asked.

A fake can also misbehave the ways a broken or hostile tracker does: answer one byte at a time
(``drip_s``), answer more than any cap allows (``huge_bytes``, streamed without a length), list
entries no reader can read (``raw_rows``: JSON text spliced into the list answers), page without end
(``Harvest(endless=True)``, ``Kimai(endless=True)``), or redirect (``fail(302, {"Location": …})``).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

DATA = Path(__file__).resolve().parents[1] / "data" / "sync"


def shapes(tracker: str) -> dict[str, Any]:
    return json.loads((DATA / f"{tracker}.json").read_text())


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse(value: str) -> dt.datetime:
    when = dt.datetime.fromisoformat(value)
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


@dataclass
class Seen:
    at: float
    path: str
    query: dict[str, str]
    status: int


@dataclass
class Scripted:
    status: int
    headers: dict[str, str]
    matches: Callable[[str], bool]
    times: int


@dataclass
class Fake:
    """What every fake tracker shares: the token it accepts, scripted answers, the request log."""

    token: str
    #: What a wrong token gets (Toggl answers 403, the others 401).
    refused_status: int = 401
    requests: list[Seen] = field(default_factory=list)
    script: list[Scripted] = field(default_factory=list)
    #: While set, requests wait (a sync is held mid-read, to show a second one is refused).
    hold: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Seconds between two bytes of every answer (a slow drip); 0: at once.
    drip_s: float = 0.0
    #: Answer every request with this many bytes of JSON, streamed with no Content-Length.
    huge_bytes: int = 0
    #: Bytes the fake wrote of its huge answers before the client hung up.
    huge_sent: int = 0
    #: JSON texts added to every list of entries it answers (entries no reader can read).
    raw_rows: list[str] = field(default_factory=list)

    def fail(self, status: int, headers: dict[str, str] | None = None, path: str = "", times: int = 1) -> None:
        self.script.append(Scripted(status, headers or {}, lambda p: path in p, times))

    def scripted(self, path: str) -> Scripted | None:
        with self.lock:
            for s in self.script:
                if s.times > 0 and s.matches(path):
                    s.times -= 1
                    return s
        return None

    def entry_requests(self, part: str) -> list[Seen]:
        return [r for r in self.requests if part in r.path and r.status == 200]

    def authorised(self, headers) -> bool:  # pragma: no cover - each fake says how
        raise NotImplementedError

    def answer(self, path: str, query: dict[str, str], host: str) -> tuple[int, dict[str, str], Any]:
        raise NotImplementedError  # pragma: no cover


def _query(raw: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(raw, keep_blank_values=True).items()}


# --- Toggl Track --------------------------------------------------------------------------------

class Toggl(Fake):
    def __init__(self, token: str, projects: int = 3) -> None:
        super().__init__(token, refused_status=403)
        s = shapes("toggl")
        self.me = {**s["me"], "api_token": token}
        self.workspace = s["me"]["default_workspace_id"]
        self.clients = [s["client"], {**s["client"], "id": s["client"]["id"] + 1, "name": "Globex"}]
        self.projects = [{**s["project"], "id": s["project"]["id"] + i, "name": f"Project {i}" if i else "Website",
                          "client_id": self.clients[i % 2]["id"], "cid": self.clients[i % 2]["id"]}
                         for i in range(projects)]
        self.template = s["time_entry"]
        self.entries: dict[int, dict] = {}
        self.next_id = self.template["id"]

    def authorised(self, headers) -> bool:
        expected = "Basic " + base64.b64encode(f"{self.token}:api_token".encode()).decode()
        return headers.get("Authorization") == expected

    def add(self, start: dt.datetime, seconds: int | None, description: str = "Work", project: int = 0,
            running: bool = False) -> int:
        self.next_id += 1
        p = self.projects[project]
        self.entries[self.next_id] = {**copy.deepcopy(self.template), "id": self.next_id, "start": iso(start),
                                      "stop": None if running else iso(start + dt.timedelta(seconds=seconds)),
                                      "duration": -1 if running else seconds,
                                      "description": description, "project_id": p["id"], "pid": p["id"],
                                      "at": iso(now_utc())}
        return self.next_id

    def edit(self, entry_id: int, **values: Any) -> None:
        e = self.entries[entry_id]
        e.update(values, at=iso(now_utc()))
        if "duration" in values:
            e["stop"] = iso(parse(e["start"]) + dt.timedelta(seconds=values["duration"]))

    def stop(self, entry_id: int, seconds: int) -> None:
        self.edit(entry_id, duration=seconds)

    def delete(self, entry_id: int) -> None:
        self.entries[entry_id].update(server_deleted_at=iso(now_utc()), at=iso(now_utc()))

    def answer(self, path, query, host):
        if path == "/api/v9/me":
            return 200, {}, self.me
        prefix = f"/api/v9/workspaces/{self.workspace}/"
        if path == prefix + "clients":
            return 200, {}, self.clients
        if path == prefix + "projects":
            page, per = int(query.get("page", 1)), int(query.get("per_page", 151))
            return 200, {}, self.projects[(page - 1) * per:page * per]
        if path == "/api/v9/me/time_entries":
            rows = list(self.entries.values())
            if "since" in query:
                since = dt.datetime.fromtimestamp(int(query["since"]), dt.UTC)
                return 200, {}, [e for e in rows if parse(e["at"]) >= since]
            first, last = parse(query["start_date"]), parse(query["end_date"])
            return 200, {}, [e for e in rows if not e["server_deleted_at"] and first <= parse(e["start"]) < last]
        if path.startswith("/api/v9/workspaces/"):
            return 403, {}, "Incorrect username and/or password"
        return 404, {}, {"error": "not found"}


# --- Clockify -----------------------------------------------------------------------------------

class Clockify(Fake):
    def __init__(self, token: str, workspaces: int = 1) -> None:
        super().__init__(token)
        s = shapes("clockify")
        self.user = copy.deepcopy(s["user"])
        if workspaces > 1:
            self.user["memberships"].append(s["second_membership"])
        self.workspace, self.user_id = self.user["defaultWorkspace"], self.user["id"]
        self.template = s["time_entry"]
        self.entries: dict[str, dict] = {}
        self.counter = 0

    def authorised(self, headers) -> bool:
        return headers.get("X-Api-Key") == self.token

    def add(self, start: dt.datetime, seconds: int | None, description: str = "Work", project: str = "Software Development",
            client: str = "Client X", running: bool = False) -> str:
        self.counter += 1
        entry_id = f"64c777ddd3fcab07{self.counter:08x}"
        e = copy.deepcopy(self.template)
        end = None if running else start + dt.timedelta(seconds=seconds)
        h, rest = divmod(seconds or 0, 3600)
        duration = None if running else f"PT{h}H{rest // 60}M{rest % 60}S"
        e.update(id=entry_id, description=description,
                 timeInterval={"start": iso(start), "end": iso(end) if end else None, "duration": duration})
        e["project"].update(name=project, clientName=client)
        self.entries[entry_id] = e
        return entry_id

    def edit(self, entry_id: str, seconds: int) -> None:
        interval = self.entries[entry_id]["timeInterval"]
        end = parse(interval["start"]) + dt.timedelta(seconds=seconds)
        h, rest = divmod(seconds, 3600)
        interval.update(end=iso(end), duration=f"PT{h}H{rest // 60}M{rest % 60}S")

    stop = edit

    def delete(self, entry_id: str) -> None:
        del self.entries[entry_id]

    def answer(self, path, query, host):
        if path == "/api/v1/user":   # memberships only when asked for, as Clockify answers
            return 200, {}, self.user if query.get("include-memberships") == "true" else {**self.user, "memberships": []}
        if path == f"/api/v1/workspaces/{self.workspace}/user/{self.user_id}/time-entries":
            first, last = parse(query["start"]), parse(query["end"])
            rows = sorted((e for e in self.entries.values()
                           if first <= parse(e["timeInterval"]["start"]) <= last),
                          key=lambda e: e["timeInterval"]["start"], reverse=True)
            page, size = int(query.get("page", 1)), int(query.get("page-size", 50))
            return 200, {}, rows[(page - 1) * size:page * size]
        return 404, {}, {"message": "not found", "code": 404}


# --- Harvest ------------------------------------------------------------------------------------

class Harvest(Fake):
    def __init__(self, token: str, account: str = "1234567", max_per_page: int = 2000, endless: bool = False) -> None:
        super().__init__(token)
        self.endless = endless
        s = shapes("harvest")
        self.me, self.template, self.envelope = s["me"], s["time_entry"], s["page"]
        self.account, self.max_per_page = account, max_per_page
        self.entries: dict[int, dict] = {}
        self.next_id = self.template["id"]

    def authorised(self, headers) -> bool:
        return (headers.get("Authorization") == f"Bearer {self.token}"
                and headers.get("Harvest-Account-Id") == self.account)

    def add(self, day: dt.date, hours: float | None, notes: str = "Work", project: str = "Marketing Website",
            client: str = "ABC Corp", running: bool = False) -> int:
        self.next_id += 1
        e = copy.deepcopy(self.template)
        e.update(id=self.next_id, spent_date=day.isoformat(), hours=hours if hours is not None else 0.42,
                 notes=notes, is_running=running, updated_at=iso(now_utc()),
                 timer_started_at=iso(now_utc()) if running else None)
        e["project"]["name"], e["client"]["name"] = project, client
        self.entries[self.next_id] = e
        return self.next_id

    def edit(self, entry_id: int, hours: float) -> None:
        self.entries[entry_id].update(hours=hours, updated_at=iso(now_utc()))

    def stop(self, entry_id: int, hours: float) -> None:
        self.entries[entry_id].update(hours=hours, is_running=False, timer_started_at=None, updated_at=iso(now_utc()))

    def delete(self, entry_id: int) -> None:
        del self.entries[entry_id]

    def answer(self, path, query, host):
        if path == "/v2/users/me":
            return 200, {}, self.me
        if path != "/v2/time_entries":
            return 404, {}, {"error": "not_found"}
        rows = sorted(self.entries.values(), key=lambda e: (e["spent_date"], e["id"]), reverse=True)
        if "from" in query:
            rows = [e for e in rows if e["spent_date"] >= query["from"]]
        if "to" in query:
            rows = [e for e in rows if e["spent_date"] <= query["to"]]
        if "updated_since" in query:
            rows = [e for e in rows if parse(e["updated_at"]) >= parse(query["updated_since"])]
        per = min(int(query.get("per_page", 2000)), self.max_per_page)
        page = int(query.get("page", 1))
        pages = max(1, -(-len(rows) // per)) if not self.endless else page + 1   # always one more

        def link(n: int | None) -> str | None:
            return None if n is None else f"http://{host}/v2/time_entries?" + urlencode({**query, "page": n,
                                                                                          "per_page": per})
        body = {**self.envelope, "time_entries": rows[(page - 1) * per:page * per], "per_page": per,
                "total_pages": pages, "total_entries": len(rows), "page": page,
                "next_page": page + 1 if page < pages else None, "previous_page": page - 1 if page > 1 else None,
                "links": {"first": link(1), "next": link(page + 1 if page < pages else None),
                          "previous": link(page - 1 if page > 1 else None), "last": link(pages)}}
        return 200, {}, body


# --- Kimai --------------------------------------------------------------------------------------

class Kimai(Fake):
    def __init__(self, token: str, max_size: int = 500, zone: str = "Europe/Berlin", endless: bool = False) -> None:
        super().__init__(token)
        self.endless = endless
        from zoneinfo import ZoneInfo

        self.template = shapes("kimai")["timesheet"]
        self.zone = ZoneInfo(zone)
        self.max_size = max_size
        self.entries: dict[int, dict] = {}
        self.next_id = self.template["id"]

    def authorised(self, headers) -> bool:
        return headers.get("Authorization") == f"Bearer {self.token}"

    def _local(self, when: dt.datetime) -> str:
        return when.astimezone(self.zone).strftime("%Y-%m-%dT%H:%M:%S%z")

    def add(self, start: dt.datetime, seconds: int | None, description: str = "Work", project: str = "Maintenance",
            customer: str = "Kimai GmbH", running: bool = False) -> int:
        self.next_id += 1
        e = copy.deepcopy(self.template)
        e.update(id=self.next_id, begin=self._local(start), description=description,
                 end=None if running else self._local(start + dt.timedelta(seconds=seconds)),
                 duration=0 if running else seconds)
        e["project"]["name"], e["project"]["customer"]["name"] = project, customer
        self.entries[self.next_id] = e
        return self.next_id

    def edit(self, entry_id: int, seconds: int) -> None:
        e = self.entries[entry_id]
        e.update(duration=seconds, end=self._local(parse(e["begin"]) + dt.timedelta(seconds=seconds)))

    stop = edit

    def delete(self, entry_id: int) -> None:
        del self.entries[entry_id]

    def answer(self, path, query, host):
        if path == "/api/users/me":   # Kimai 2 serialises the zone preference on the user, and in the list
            user = self.template["user"]
            return 200, {}, {**user, "language": "en", "timezone": self.zone.key,
                             "preferences": [{"name": "timezone", "value": self.zone.key},
                                             {"name": "language", "value": "en"}]}
        if path != "/api/timesheets":
            return 404, {}, {"code": 404, "message": "Not Found"}
        rows = sorted(self.entries.values(), key=lambda e: e["begin"], reverse=True)
        # begin/end are wall-clock times in the user's zone (HTML5 local datetime).
        if "begin" in query:
            first = dt.datetime.fromisoformat(query["begin"]).replace(tzinfo=self.zone)
            rows = [e for e in rows if parse(e["begin"]) >= first]
        if "end" in query:
            last = dt.datetime.fromisoformat(query["end"]).replace(tzinfo=self.zone)
            rows = [e for e in rows if parse(e["begin"]) <= last]
        size = min(int(query.get("size", 50)), self.max_size)
        page = int(query.get("page", 1))
        pages = max(1, -(-len(rows) // size))
        if self.endless:   # a full page every time, and always more pages
            return 200, {"X-Total-Pages": str(10 ** 9)}, [{**rows[0], "id": page * 1000 + i} for i in range(size)]
        if page > pages:
            return 404, {}, {"code": 404, "message": "Not Found"}
        headers = {"X-Page": str(page), "X-Total-Count": str(len(rows)), "X-Total-Pages": str(pages),
                   "X-Per-Page": str(size)}
        return 200, headers, rows[(page - 1) * size:page * size]


# --- the server ---------------------------------------------------------------------------------

ROUTES = (("/api/v9/", "toggl"), ("/api/v1/", "clockify"), ("/v2/", "harvest"), ("/api/timesheets", "kimai"),
          ("/api/users/me", "kimai"))


class Trackers:
    """One loopback server for all four fakes (their paths never overlap); ``url`` is its base."""

    def __init__(self, **fakes: Fake) -> None:
        self.fakes = fakes
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self):
        trackers = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:   # quiet: the test reads ``requests`` instead
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's hook name
                parts = urlsplit(self.path)
                fake = next((trackers.fakes.get(name) for prefix, name in ROUTES if parts.path.startswith(prefix)),
                            None)
                if fake is None:
                    return self._send(404, {}, {"error": "no such tracker"})
                query = _query(parts.query)
                while fake.hold.is_set():
                    fake.released.set()
                    time.sleep(0.01)
                scripted = fake.scripted(parts.path)
                if scripted is not None:
                    status, headers, body = scripted.status, scripted.headers, {"message": "scripted"}
                elif not fake.authorised(self.headers):
                    status, headers, body = fake.refused_status, {}, {"message": "Invalid credentials"}
                else:
                    with fake.lock:
                        status, headers, body = fake.answer(parts.path, query, self.headers.get("Host", ""))
                fake.requests.append(Seen(time.monotonic(), parts.path, query, status))
                if fake.huge_bytes and status == 200:
                    return self._huge(fake)
                self._send(status, headers, body, fake)

            def _send(self, status: int, headers: dict[str, str], body: Any, fake: Fake | None = None) -> None:
                text = json.dumps(body)
                if fake is not None and fake.raw_rows and isinstance(body, list):
                    text = "[" + ", ".join([*(json.dumps(e) for e in body), *fake.raw_rows]) + "]"
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if fake is None or not fake.drip_s:
                    self.wfile.write(data)
                    return
                try:   # one byte at a time, until the client gives up
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(fake.drip_s)
                except OSError:
                    pass

            def _huge(self, fake: Fake) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()   # no length: the body ends when the connection does
                chunk = b"[" + b"1234567," * 8191 + b"0]"
                try:
                    self.wfile.write(b"[")
                    while fake.huge_sent < fake.huge_bytes:
                        self.wfile.write(chunk)
                        fake.huge_sent += len(chunk)
                except OSError:
                    pass
                self.close_connection = True

        return Handler

    def __enter__(self) -> Trackers:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.thread.join(timeout=5)
        self.server.server_close()


@contextmanager
def serving(**fakes: Fake) -> Iterator[Trackers]:
    with Trackers(**fakes) as trackers:
        yield trackers
