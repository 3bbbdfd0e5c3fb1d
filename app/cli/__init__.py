"""The ``hourtab`` console script: a click group whose commands each call one service.

Topic commands live in sibling modules (``app/cli/<topic>.py``), each exposing ``commands``.
Errors become exit codes in one place (``app/cli/errors.py``): 2 for refused input, 1 for a
failure, one line on stderr, never a traceback.
"""

from __future__ import annotations

import importlib

import click

from app.cli.core import db_group, serve, user_group
from app.cli.errors import HourTabGroup

#: Topic modules whose ``commands`` lists are added to the group, in ``--help`` order.
TOPIC_MODULES = ("app.cli.timesheets", "app.cli.entries", "app.cli.sync", "app.cli.retainers", "app.cli.wandb", "app.cli.repro",
                 "app.cli.incidents", "app.cli.audit", "app.cli.watchdog", "app.cli.worker", "app.cli.tokens",
                 "app.cli.invoices")


@click.group(cls=HourTabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hourtab")
def cli() -> None:
    """HourTab: retainer hours pages and ML training incident reports."""


cli.add_command(serve)
cli.add_command(db_group)
cli.add_command(user_group)
for _name in TOPIC_MODULES:
    for _command in importlib.import_module(_name).commands:
        cli.add_command(_command)


def main() -> None:
    cli(prog_name="hourtab")
