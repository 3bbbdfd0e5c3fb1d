"""CLI commands for this topic (filled in by its feature)."""

import click

commands: list[click.Command] = []
