"""Demo incident for ``hourtab serve --demo``: a published writeup built from real reproducer output.

The web install has no torch, so the reproducer's tiny-preset output (W&B offline runs and
profile.json, see ``incidents/samples/repro-tiny/PROVENANCE.md``) is shipped as sample data and
ingested like any upload. Three sessions of consultant time (dated in the current week, so they
show on the hours page) are imported from a small Toggl-shaped CSV and assigned to phases.
Idempotent: an existing demo incident is left as it is.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.accounts import Account
from hourtab.blobs import blob_store
from hourtab.scoping import select_owned
from incidents import service
from incidents.models import Incident
from incidents.sample_data import REPRO_TINY, repro_tiny_runs

TITLE = "Fine-tuning steps slowed by wandb.watch (reproducer demo)"
SESSIONS = (  # task, description, duration, phase
    ("investigation", "Profiled the slow training run against a baseline", "01:24:00", "investigation"),
    ("fix", "Changed the wandb.watch call and reran", "00:36:00", "fix"),
    ("validation", "Validated step times and loss curves after the fix", "00:30:00", "validation"),
)


def _retainer(session: Session, account: Account):
    from hourtab.retainers import service as retainers
    from hourtab.retainers.models import Retainer

    found = session.scalars(select_owned(Retainer, account.id).where(Retainer.active.is_(True))
                            .order_by(Retainer.id)).first()
    if found is not None:
        return found
    terms = retainers.parse_terms(retainers.TermsInput(hours="20", start=dt.date.today().replace(day=1).isoformat(),
                                                       timezone="UTC"))
    return retainers.create_retainer(session, account, "ML engineering retainer", "Demo Client", terms)


def _import_sessions(session: Session, account: Account, client: str) -> list[int]:
    from hourtab.retainers.service import match_entries
    from hourtab.timesheets.importer import import_file
    from hourtab.timesheets.models import TimeEntry

    today = dt.date.today()
    header = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
              "Duration,Tags,Amount ()\n")
    lines = [header]
    for i, (task, description, duration, _) in enumerate(SESSIONS):
        day = max(today.replace(day=1), today - dt.timedelta(days=len(SESSIONS) - 1 - i))
        h, m, s = (int(x) for x in duration.split(":"))
        start = dt.datetime.combine(day, dt.time(9 + i))
        end = start + dt.timedelta(hours=h, minutes=m, seconds=s)
        lines.append(f'Demo,demo@hourtab.example,{client},BERT fine-tuning,{task},"{description}",Yes,'
                     f"{day},{start:%H:%M:%S},{end:%Y-%m-%d},{end:%H:%M:%S},{duration},incident,\n")
    import_file(session, account, "".join(lines).encode(), "incident-sessions.csv", timezone="UTC",
                created_by="demo loader")
    match_entries(session, account.id)
    rows = session.scalars(select_owned(TimeEntry, account.id).where(TimeEntry.tags.contains("incident"))
                           .order_by(TimeEntry.local_date, TimeEntry.id)).all()
    return [r.id for r in rows][-len(SESSIONS):]


def load_incident_demo(session: Session, account: Account) -> None:
    if not (REPRO_TINY / "profile.json").is_file():
        return
    if session.scalar(select(Incident.id).where(Incident.account_id == account.id, Incident.title == TITLE)):
        return
    cfg = current_app.config
    blobs = blob_store(Path(cfg["DATA_DIR"]), cfg.get("BLOB_URL", ""), cfg.get("BLOB_ENDPOINT_URL", ""))
    retainer = _retainer(session, account)
    runs = repro_tiny_runs()
    incident = service.create_incident(session, account.id, TITLE, retainer.id)
    for role, mode in (("incident", "watch:all:1"), ("baseline", "baseline")):
        evidence = service.ingest_run_path(session, account.id, runs[mode], blobs)
        service.attach_run(session, incident, evidence.id, role)
    service.attach_profile(session, incident, *service.read_profile(REPRO_TINY / "profile.json"))
    for entry_id, (_, _, _, phase) in zip(_import_sessions(session, account, retainer.client), SESSIONS,
                                          strict=False):
        service.assign_entries(session, incident, [entry_id], phase)
    service.update_incident(session, incident, service.Edits(
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
    service.add_action(session, incident, "Add a step-time alert to the training dashboard", "ML platform",
                       dt.date.today() + dt.timedelta(days=14), "detect")
    service.refresh_generated(session, incident, blobs, account.display_name)
    service.publish(session, incident)
