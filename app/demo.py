"""``hourtab serve --demo``: a demo account with time entries, retainers and a published incident.

Everything comes from data shipped in the packages (``hourtab/timesheets/samples`` and
``incidents/evidence/samples``), never from the tests. The sample exports are old (2017, 2024), so their
dates are moved forward by whole weeks to end in the last seven days: the retainers built on them
show a period in progress rather than years of empty months. Their authors anonymised them with
placeholders ("Client 1", "Project A", "Lorem ipsum"); the demo keeps their real timing and gives
the rows the names of an ML consultant's month (``DemoNames``): a BERT fine-tuning client, whose page
also shows an incident's work sessions and its log entry, and an MLOps platform client. Running the
loader again resets the password and adds nothing.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from flask import Flask
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import jobs
from hourtab.core import accounts, progress
from hourtab.core.accounts import Account
from hourtab.core.blobs import BlobStore
from hourtab.core.db import transaction
from hourtab.core.jobs import Job, create_job
from hourtab.core.scoping import select_owned
from hourtab.imports import uploads
from hourtab.imports.importer import import_file
from hourtab.retainers import service as retainers
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import Retainer
from hourtab.timesheets.models import TimeEntry, Upload
from incidents.evidence.sample_data import REPRO_TINY, repro_tiny_runs
from incidents.writeups import billed_entries
from incidents.writeups import service as incidents
from incidents.writeups.models import Incident

DEMO_EMAIL = "demo@hourtab.example"
DEMO_NAME = "Dana Okafor"
SAMPLES = files("hourtab.timesheets") / "samples"


@dataclass(frozen=True)
class DemoNames:
    """What a sample's placeholder names become (a name not listed is kept)."""

    clients: dict[str, str]
    projects: dict[str, str]
    descriptions: dict[str, str] = field(default_factory=dict)
    #: A description for every row of a project, where the sample repeats one filler text.
    project_descriptions: dict[str, str] = field(default_factory=dict)

    def apply(self, header: list[str], row: list[str]) -> None:
        at = {name: i for i, name in enumerate(header)}
        project = row[at["Project"]] if "Project" in at else ""
        for column, names in (("Client", self.clients), ("Project", self.projects),
                              ("Description", self.descriptions)):
            if column in at:
                row[at[column]] = names.get(row[at[column]], row[at[column]])
        if "Description" in at and project in self.project_descriptions:
            row[at["Description"]] = self.project_descriptions[project]
        if "User" in at:
            row[at["User"]] = DEMO_NAME
        if "Email" in at:
            row[at["Email"]] = DEMO_EMAIL


BERT_CLIENT, PLATFORM_CLIENT = "Lumen Health", "Orbital Robotics"
#: The Toggl sample's month becomes a BERT fine-tuning engagement (and a second client's proof of concept).
FLORES_NAMES = DemoNames(
    clients={"Client 1": BERT_CLIENT, "Client 2": "Arcadia Retail"},
    projects={"Project A": "Training runs", "Project B": "Fine-tuning pipeline", "Project C": "Evaluation",
              "Project D": "Planning", "Project E": "Model card", "Project F": "Serving latency",
              "Project G": "Demand forecast POC", "Project H": "Kickoff"},
    descriptions={
        "Recurring activity 201708": "Daily check of the overnight BERT fine-tuning runs",
        "Misc updates": "Updated the run tracker and notes", "Research": "Read up on parameter-efficient fine-tuning",
        "Reproducible analysis report": "Reproducible evaluation report",
        "New survey analysis": "Error analysis of the new validation set", "Website": "Model card page",
        "Debugging": "Debugged tokenizer truncation of long notes",
        "Adapt previous project for new recipients": "Adapted the training config to the new label set",
        "Analysis": "Loss-curve analysis", "Proof of concept with modifications": "Distillation proof of concept, v2",
        "Quick checking": "Spot-checked predictions", "Quick model": "Logistic-regression baseline",
        "Conversation with client": "Call with the client's ML lead", "Proposal analysis": "Reviewed the GPU budget",
        "Showcase project": "Demo notebook for stakeholders", "Project kickoff": "Project kickoff",
        "Conversation with client - Prepare": "Prepared the client call", "[Tracking] Proposals": "Open proposals",
        "Consulting": "Architecture advice", "Write a new proposal": "Wrote the next-phase proposal",
        "Analyze NDA": "Read the data-sharing agreement", "Writing": "Wrote the fine-tuning runbook",
        "Checkpoint": "Checkpoint review", "Proof of concept": "Distillation proof of concept",
        "Write report": "Wrote the evaluation report", "Report with modifications": "Revised the evaluation report",
        "Call with Client": "Call with the client", "Some writing": "Documentation",
        "Budget for august 2017": "GPU budget for the month", "Board for august 2017": "Planning board for the month",
        "Analyze july time spending": "Reviewed last month's hours", "Conversation with client - Call": "Client call",
        "Meeting with client": "Meeting with the client", "Proof of concept - New": "New proof of concept",
        "Tax report": "Admin", "Analyze offering": "Reviewed the service offering",
        "Video update": "Recorded a progress video", "Update records": "Updated the experiment log",
        "Phone call - Prepare": "Prepared a phone call", "Phone call - Research": "Follow-up research after a call",
        "Tweeting": "Short post on the fine-tuning results", "Website fix": "Model card page fix",
        "Website fix for new ticket": "Model card fix for a new ticket", "Plan new board in Trello": "Sprint board",
        "Data entry": "Labelled a batch of validation notes", "Support: User": "Support: annotation team",
        "Update stack": "Upgraded transformers and torch", "Fix script issues": "Fixed the training script's resume",
        "Tests": "Tests for the data loader", "Content generation": "Wrote evaluation prompts",
        "New content according to requests": "New evaluation cases on request",
        "Updates on research resources": "Updated the reading list", "Meetup": "ML meetup talk prep",
        "Analyze new functions": "Tried the new trainer callbacks", "Paper research": "Read the LoRA paper again",
    })
#: The Clockify sample (one filler description throughout) becomes an MLOps platform retainer.
DAMIRARH_NAMES = DemoNames(
    clients={"Company": PLATFORM_CLIENT},
    projects={"Project A": "Training cluster", "Project B": "Experiment tracking", "Project C": "MLOps on-call",
              "Project D": "Cost review"},
    project_descriptions={"Project A": "GPU node pool upkeep", "Project B": "Cleaned up the W&B workspace",
                          "Project C": "On call: restarted failed training jobs",
                          "Project D": "Reviewed the month's GPU spend"})

#: Sample exports (see samples/PROVENANCE.md), the retainer built on each one's client, its names.
DEMO_FILES: tuple[tuple[str, str, str, dict[str, Any], DemoNames], ...] = (
    # Real Toggl export, anonymised by its author (floresfdev/toggl-dashboard).
    ("toggl_floresfdev_2017-08.csv", "BERT fine-tuning retainer", BERT_CLIENT,
     dict(hours="120", rounding=6, rollover_cap="10"), FLORES_NAMES),
    # Real Clockify shared-report CSV with lorem-ipsum descriptions (damirarh/ClockifyExport).
    ("clockify_damirarh_shared_report.csv", "MLOps platform retainer", PLATFORM_CLIENT,
     dict(hours="80", rounding=15, rounding_mode="nearest"), DAMIRARH_NAMES),
)
DATE_COLUMNS = ("Start date", "End date", "Date")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

INCIDENT_TITLE = "Fine-tuning steps slowed by wandb.watch (reproducer demo)"
SESSIONS = (  # task, description, duration, phase
    ("investigation", "Profiled the slow training run against a baseline", "01:24:00", "investigation"),
    ("fix", "Changed the wandb.watch call and reran", "00:36:00", "fix"),
    ("validation", "Validated step times and loss curves after the fix", "00:30:00", "validation"),
)


def _demo_account(session: Session) -> tuple[Account, str]:
    """The demo account, created or given a fresh random password (other sessions end)."""
    password = secrets.token_urlsafe(12)
    account = accounts.find_account(session, DEMO_EMAIL)
    if account is None:
        account = accounts.create_account(session, DEMO_EMAIL, password, plan="pro", display_name=DEMO_NAME)
    else:
        accounts.reset_password(session, account, password)
    return account, password


def load_demo(session: Session, blobs: BlobStore, today: dt.date | None = None) -> tuple[str, str]:
    """Create (or reset) the demo account with a fresh random password and load the sample data."""
    with transaction(session):
        account, password = _demo_account(session)
        load_samples(session, account, blobs, today)
    return DEMO_EMAIL, password


def load_samples(session: Session, account: Account, blobs: BlobStore, today: dt.date | None = None) -> None:
    """The sample exports, the reproducer's incident and the retainers over them (idempotent)."""
    today = today or dt.date.today()
    starts = _load_timesheets(session, account, blobs, today)
    _load_retainers(session, account, starts)
    _load_incident(session, account, blobs, today)   # on the BERT client's retainer, made just above


def queue_demo(session: Session, enqueue: Callable[[str], None] | None = None) -> tuple[str, str, str]:
    """The demo account now, its sample data on a worker: returns (e-mail, password, job id).

    ``enqueue`` hands the job to the queue; by default the current app's.
    """
    with transaction(session):
        account, password = _demo_account(session)
        job = create_job(session, account.id, "demo_setup", {})
    (enqueue or jobs.enqueue)(job.id)
    return DEMO_EMAIL, password, job.id


def init_app(app: Flask) -> None:
    """Register the ``demo_setup`` job: the samples in the job's one transaction."""
    blobs: BlobStore = app.extensions["hourtab.blobs"]

    def demo_setup(session: Session, job: Job) -> dict:
        progress.report("Loading the demo data", 0, 1)
        # Progress is written from another connection: nothing reports inside this write transaction.
        with progress.quiet():
            load_samples(session, session.get_one(Account, job.account_id), blobs)
        return {}

    app.extensions["hourtab.queue"].register("demo_setup", demo_setup, "Loading the demo data", 600)


def shifted_export(data: bytes, today: dt.date, names: DemoNames | None = None) -> tuple[bytes, dt.date]:
    """The export with its ISO dates moved by whole weeks so the last falls in the week to ``today``
    (and its placeholder names replaced by ``names``).

    Returns the new bytes and the first date after the move.
    """
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    header, body = rows[0], rows[1:]
    if names is not None:
        for row in body:
            names.apply(header, row)
    columns = [i for i, name in enumerate(header) if name in DATE_COLUMNS]
    dates = [dt.date.fromisoformat(row[i]) for row in body for i in columns if ISO_DATE.match(row[i])]
    shift = dt.timedelta(weeks=(today - max(dates)).days // 7)
    for row in body:
        for i in columns:
            if ISO_DATE.match(row[i]):
                row[i] = (dt.date.fromisoformat(row[i]) + shift).isoformat()
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    return out.getvalue().encode(), min(dates) + shift


def _load_timesheets(session: Session, account: Account, blobs: BlobStore, today: dt.date) -> dict[str, dt.date]:
    """Import each sample once (by file name); returns each file's first date after the move."""
    starts = {}
    for name, *_, names in DEMO_FILES:
        data, starts[name] = shifted_export((SAMPLES / name).read_bytes(), today, names)
        done = session.scalar(select(Upload.id).where(Upload.account_id == account.id, Upload.filename == name,
                                                      Upload.status == "imported"))
        if done is None:
            uploads.stage_and_import(session, account, data, name, blobs, timezone="UTC", created_by="demo loader")
    return starts


def _load_retainers(session: Session, account: Account, starts: dict[str, dt.date]) -> None:
    """A monthly retainer per sample client, starting the month its entries start; then match."""
    existing = set(session.scalars(select(Retainer.name).where(Retainer.account_id == account.id)))
    for filename, name, client, terms, _ in DEMO_FILES:
        if name not in existing:
            start = starts[filename].replace(day=1).isoformat()
            parsed = retainers.parse_terms(retainers.TermsInput(start=start, **terms))
            retainers.create_retainer(session, account, name, client, parsed, MatchRules(clients=(client,)))
    retainers.match_entries(session, account.id)


def _incident_retainer(session: Session, account: Account, today: dt.date) -> Retainer:
    found = session.scalars(select_owned(Retainer, account.id).where(Retainer.active.is_(True))
                            .order_by((Retainer.client == BERT_CLIENT).desc(), Retainer.id)).first()
    if found is not None:
        return found
    terms = retainers.parse_terms(retainers.TermsInput(hours="20", start=today.replace(day=1).isoformat(),
                                                       timezone="UTC"))
    return retainers.create_retainer(session, account, "BERT fine-tuning retainer", BERT_CLIENT, terms,
                                     MatchRules(clients=(BERT_CLIENT,)))


def _import_sessions(session: Session, account: Account, client: str, today: dt.date) -> list[int]:
    """Three sessions of consultant time, in the current week so they show on the hours page."""
    header = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
              "Duration,Tags,Amount ()\n")
    lines = [header]
    for i, (task, description, duration, _) in enumerate(SESSIONS):
        day = max(today.replace(day=1), today - dt.timedelta(days=len(SESSIONS) - 1 - i))
        h, m, s = (int(x) for x in duration.split(":"))
        start = dt.datetime.combine(day, dt.time(9 + i))
        end = start + dt.timedelta(hours=h, minutes=m, seconds=s)
        lines.append(f'{DEMO_NAME},{DEMO_EMAIL},{client},BERT fine-tuning,{task},"{description}",Yes,'
                     f"{day},{start:%H:%M:%S},{end:%Y-%m-%d},{end:%H:%M:%S},{duration},incident,\n")
    import_file(session, account, "".join(lines).encode(), "incident-sessions.csv", timezone="UTC",
                created_by="demo loader")
    retainers.match_entries(session, account.id)
    rows = session.scalars(select_owned(TimeEntry, account.id).where(TimeEntry.tags.contains("incident"))
                           .order_by(TimeEntry.local_date, TimeEntry.id)).all()
    return [r.id for r in rows][-len(SESSIONS):]


def _load_incident(session: Session, account: Account, blobs: BlobStore, today: dt.date) -> None:
    """A published writeup built from the reproducer's shipped output (the web install has no torch)."""
    if session.scalar(select(Incident.id).where(Incident.account_id == account.id,
                                                Incident.title == INCIDENT_TITLE)):
        return
    retainer = _incident_retainer(session, account, today)
    runs = repro_tiny_runs()
    incident = incidents.create_incident(session, account.id, INCIDENT_TITLE, retainer.id)
    for role, mode in (("incident", "watch:all:1"), ("baseline", "baseline")):
        evidence = incidents.ingest_run_path(session, account.id, runs[mode], blobs)
        incidents.attach_run(session, incident, evidence.id, role)
    incidents.attach_profile(session, incident, *incidents.read_profile(REPRO_TINY / "profile.json"))
    entry_ids = _import_sessions(session, account, retainer.client, today)
    for entry_id, (_, _, _, phase) in zip(entry_ids, SESSIONS, strict=False):
        billed_entries.assign_entries(session, incident, [entry_id], phase)
    incidents.update_incident(session, incident, incidents.Edits(
        sections={
            "summary": "Fine-tuning steps ran several times slower than expected. The cause was "
                       "`wandb.watch(model, log=\"all\", log_freq=1)`, which computes a histogram of every "
                       "parameter and gradient at every step. The figures below are the reproducer's, "
                       "measured on the machine named in the profile (tiny BERT preset, CPU).",
            "impact": "Every training step paid for histogram work; GPU time was spent waiting.",
            "detection": "Step time compared with a run without `wandb.watch`, then a profile of the hooks.",
            "root_cause": "`log=\"all\", log_freq=1` asks wandb for two histograms per tensor per step, "
                          "each with a full copy, finiteness checks, min/max host syncs and `histc`.",
            "lessons": "Keep `wandb.watch` at its defaults or use a low-overhead watch; profile before "
                       "scaling a run.",
        },
        fix_before='wandb.watch(model, log="all", log_freq=1)',
        fix_after='wandb.watch(model, log="gradients", log_freq=100)'))
    incidents.add_action(session, incident, "Add a step-time alert to the training dashboard", "ML platform",
                         today + dt.timedelta(days=14), "detect")
    incidents.refresh_generated(session, incident, blobs, account.display_name)
    incidents.publish(session, incident)


def demo_page(session: Session) -> str | None:
    """The path of the demo's public hours page (its BERT fine-tuning client's), if the demo is loaded."""
    account = accounts.find_account(session, DEMO_EMAIL)
    if account is None:
        return None
    token = session.scalar(select(Retainer.public_token).where(
        Retainer.account_id == account.id, Retainer.client == BERT_CLIENT, Retainer.active.is_(True),
        Retainer.public_token.is_not(None)).order_by(Retainer.id))
    return f"/h/{token}" if token else None
