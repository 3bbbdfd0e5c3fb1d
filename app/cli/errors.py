"""The one place where the CLI turns errors into exit codes and a single line on stderr.

``HourTabGroup`` is the root ``hourtab`` group; every command runs inside its ``main``, so no
command catches domain errors or picks an exit status itself. Refused input (a kernel error
kind, or click's own usage errors) exits 2; a failure exits 1; neither prints a traceback.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click
from sqlalchemy.exc import OperationalError

from hourtab.core.errors import (
    Conflict,
    HourTabError,
    InvalidInput,
    LimitReached,
    NotFound,
    Unauthorized,
    Unavailable,
)

#: Kernel error kinds and their exit status; the most specific class wins (MRO order).
EXIT_CODES: dict[type[Exception], int] = {
    InvalidInput: 2,
    NotFound: 2,
    Unauthorized: 2,
    Conflict: 2,
    LimitReached: 2,
    Unavailable: 1,
    HourTabError: 1,
}
REFUSED = 2
FAILED = 1


def exit_code_for(error: HourTabError) -> int:
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return FAILED


def one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"Error: {one_line(message)}", err=True)
    sys.exit(code)


class HourTabGroup(click.Group):
    """A click group whose ``main`` maps every error raised below it through ``EXIT_CODES``."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            status = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.exceptions.NoArgsIsHelpError as e:  # a bare group: its help, as click shows it
            e.show()
            sys.exit(e.exit_code)
        except click.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            _fail(e.format_message() + hint, REFUSED)
        except click.ClickException as e:
            _fail(e.format_message(), e.exit_code)
        except HourTabError as e:
            _fail(str(e), exit_code_for(e))
        except OperationalError as e:
            first = str(e.orig or e).splitlines()[0] if str(e.orig or e) else type(e).__name__
            _fail(f"The database could not be reached: {first}", FAILED)
        except OSError as e:
            _fail(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else ""), FAILED)
        except (click.Abort, KeyboardInterrupt, EOFError):
            click.echo("Aborted.", err=True)
            sys.exit(FAILED)
        # Outside standalone mode click returns a ``ctx.exit(n)`` status instead of exiting.
        sys.exit(status if isinstance(status, int) else 0)
