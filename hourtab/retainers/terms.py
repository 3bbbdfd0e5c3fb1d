"""A retainer's terms as one frozen value: what the ledger needs, and nothing about storage.

Every quantity of time is an integer number of seconds, so the ledger adds and subtracts exactly;
hours typed by people (``"12.5"``) become seconds once, here, through ``Decimal``.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hourtab.core.errors import InvalidInput
from hourtab.core.i18n import N_, Writer
from hourtab.core.values import EARLIEST, LATEST, MAX_HOURS, MAX_RATE
from hourtab.retainers.currency import check_currency, format_money, quantize
from hourtab.retainers.presentation import HOUR, format_hours


class InvalidTerms(InvalidInput):
    """Retainer terms that cannot describe a ledger (a reset day of 40, an unknown time zone)."""


class PeriodKind(enum.StrEnum):
    MONTHLY = "monthly"
    WEEKLY = "weekly"
    QUARTERLY = "quarterly"


class Rollover(enum.StrEnum):
    NONE = "none"  # unused hours are forfeited at the reset
    CAP = "cap"  # unused hours carry over, but the carried balance never exceeds the cap
    ALL = "all"  # every unused hour carries over


class Overage(enum.StrEnum):
    CARRY = "carry"  # hours over the balance become a negative opening balance next period
    BILL = "bill"  # hours over are billed at the overage rate and the balance resets to zero


class RoundingMode(enum.StrEnum):
    UP = "up"
    NEAREST = "nearest"


ROUNDING_INCREMENTS_MIN = (0, 6, 15, 30)

E = TypeVar("E", bound=enum.StrEnum)


def choice(enum_cls: type[E], value: object, what: str) -> E:
    """``value`` (a member or its text) as a member of ``enum_cls``; else ``InvalidTerms`` naming the choices."""
    try:
        return enum_cls(str(value))
    except ValueError as e:
        allowed = ", ".join(m.value for m in enum_cls)
        raise InvalidTerms(f"Unknown {what} {value!r}; choose one of: {allowed}.") from e


def hours_to_seconds(hours: str | int | Decimal, what: str = "hours") -> int:
    """``"12.5"`` → 45000, exactly; refuses floats' cousins such as ``"abc"`` or ``"NaN"``."""
    try:
        value = Decimal(str(hours).strip().replace(",", "."))
    except (InvalidOperation, ValueError) as e:
        raise InvalidTerms(f"{what.capitalize()} must be a number of hours, not {hours!r}.") from e
    if not value.is_finite():
        raise InvalidTerms(f"{what.capitalize()} must be a number of hours, not {hours!r}.")
    if abs(value) > MAX_HOURS:
        raise InvalidTerms(f"{what.capitalize()} must be at most {MAX_HOURS:,} hours, not {hours!r}.")
    return int((value * HOUR).to_integral_value(rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class Rounding:
    """Per-entry rounding, applied before totalling (as Harvest and most consultancies do)."""

    increment_min: int = 0
    mode: RoundingMode = RoundingMode.UP
    minimum_min: int = 0

    def __post_init__(self) -> None:
        if self.increment_min not in ROUNDING_INCREMENTS_MIN:
            raise InvalidTerms(f"Rounding must be one of {', '.join(map(str, ROUNDING_INCREMENTS_MIN))} "
                               f"minutes (0 = none), not {self.increment_min}.")
        object.__setattr__(self, "mode", choice(RoundingMode, self.mode, "rounding mode"))
        if not 0 <= self.minimum_min <= 240:
            raise InvalidTerms("The minimum per entry must be between 0 and 240 minutes.")

    @property
    def key(self) -> str:
        """The rule as stored beside the day totals kept under it (``kept_totals``), e.g. ``15/up/0``."""
        return f"{self.increment_min}/{self.mode.value}/{self.minimum_min}"

    def describe(self, w: Writer | None = None) -> str:
        """``each entry rounded up to 6 min``, in the words of ``w`` (default English)."""
        w = w or Writer()
        parts = []
        if self.increment_min:
            text = (N_("each entry rounded up to %(minutes)s min") if self.mode is RoundingMode.UP
                    else N_("each entry rounded nearest to %(minutes)s min"))
            parts.append(w.gettext(text) % {"minutes": self.increment_min})
        if self.minimum_min:
            parts.append(w.gettext("minimum %(minutes)s min per entry") % {"minutes": self.minimum_min})
        return "; ".join(parts) or w.gettext("no rounding")


#: Per kind of period: "… per month", and when rolled hours expire (singular, plural).
PER_PERIOD = {
    PeriodKind.MONTHLY: (N_("%(what)s per month"), N_("rolled hours expire after %(n)s month"),
                         N_("rolled hours expire after %(n)s months")),
    PeriodKind.WEEKLY: (N_("%(what)s per week"), N_("rolled hours expire after %(n)s week"),
                        N_("rolled hours expire after %(n)s weeks")),
    PeriodKind.QUARTERLY: (N_("%(what)s per quarter"), N_("rolled hours expire after %(n)s quarter"),
                           N_("rolled hours expire after %(n)s quarters")),
}


@dataclass(frozen=True)
class Terms:
    """What a retainer promises: an allotment per period, and what happens at each reset."""

    allotment_s: int
    start: dt.date
    period: PeriodKind = PeriodKind.MONTHLY
    #: Monthly/quarterly: day of the month (1–31; short months reset on their last day).
    #: Weekly: ISO weekday, 1 = Monday … 7 = Sunday.
    reset_day: int = 1
    timezone: str = "UTC"
    rollover: Rollover = Rollover.NONE
    rollover_cap_s: int | None = None
    #: Rolled-over hours expire after this many periods; ``None`` = they never expire.
    rollover_expiry_periods: int | None = None
    overage: Overage = Overage.CARRY
    overage_rate: Decimal | None = None
    rounding: Rounding = field(default_factory=Rounding)
    #: What the period costs (the retainer's fee), in ``currency``; ``None`` = sold in hours only.
    fee: Decimal | None = None
    #: ISO 4217 code of the fee, the rates and the amounts; needed once any amount is set.
    currency: str | None = None
    #: What an hour is worth: used and remaining hours are priced at it (default: fee ÷ hours).
    hourly_rate: Decimal | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "period", choice(PeriodKind, self.period, "period"))
        object.__setattr__(self, "rollover", choice(Rollover, self.rollover, "rollover"))
        object.__setattr__(self, "overage", choice(Overage, self.overage, "overage handling"))
        self._check_period()
        self._check_rollover()
        self._check_overage()

    def _check_period(self) -> None:
        """The allotment and when periods start: a start date, a reset day and a time zone that exist."""
        if not EARLIEST <= self.start <= LATEST:
            raise InvalidTerms(f"The start date must be between {EARLIEST} and {LATEST}, not {self.start}.")
        if not isinstance(self.allotment_s, int) or self.allotment_s <= 0:
            raise InvalidTerms("Hours per period must be more than zero.")
        if self.allotment_s > 10_000 * HOUR:
            raise InvalidTerms("Hours per period must be at most 10,000.")
        if self.period is PeriodKind.WEEKLY:
            if not 1 <= self.reset_day <= 7:
                raise InvalidTerms("A weekly retainer resets on a weekday from 1 (Monday) to 7 (Sunday).")
        elif not 1 <= self.reset_day <= 31:
            raise InvalidTerms("The reset day must be a day of the month from 1 to 31.")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise InvalidTerms(f"Unknown time zone {self.timezone!r}; use an IANA name such as "
                               "Europe/Berlin or America/New_York.") from e

    def _check_rollover(self) -> None:
        if self.rollover is Rollover.CAP:
            if self.rollover_cap_s is None or self.rollover_cap_s < 0:
                raise InvalidTerms("Rollover with a cap needs the cap in hours (zero or more).")
        elif self.rollover_cap_s is not None:
            object.__setattr__(self, "rollover_cap_s", None)
        if self.rollover_expiry_periods is not None and self.rollover_expiry_periods < 1:
            raise InvalidTerms("Rolled-over hours must live at least one period (or never expire).")

    def _check_overage(self) -> None:
        if self.overage is Overage.BILL:
            if self.overage_rate is None or Decimal(self.overage_rate) < 0:
                raise InvalidTerms("Billing overage needs an hourly overage rate (zero or more).")
            if Decimal(self.overage_rate) > MAX_RATE:
                raise InvalidTerms(f"The overage rate must be at most {MAX_RATE:,}.")
            object.__setattr__(self, "overage_rate", Decimal(self.overage_rate))

        self._check_money()

    def _check_money(self) -> None:
        if self.fee is None and self.hourly_rate is None and self.currency is None:
            return
        if self.currency is None:
            raise InvalidTerms("A fee or an hourly rate needs its currency (an ISO 4217 code such as EUR).")
        object.__setattr__(self, "currency", check_currency(self.currency))
        for name in ("fee", "hourly_rate", "overage_rate"):
            value = getattr(self, name)
            if value is None:
                continue
            if not Decimal(value).is_finite() or not 0 <= Decimal(value) <= MAX_RATE:
                raise InvalidTerms(f"The {name.replace('_', ' ')} must be from 0 to {MAX_RATE:,}.")
            object.__setattr__(self, name, quantize(Decimal(value), self.currency))

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def describe(self, w: Writer | None = None) -> str:
        """One line a client can read: what they buy and what happens at each reset, in the words
        of ``w`` (the client's language; default English)."""
        w = w or Writer()
        per = PER_PERIOD[self.period]
        parts = [w.gettext(per[0]) % {"what": f"{format_hours(self.allotment_s)} h"}]
        if self.fee is not None and self.currency:
            parts.append(w.gettext(per[0]) % {"what": format_money(self.fee, self.currency, w.language)})
        if self.hourly_rate is not None and self.currency:
            parts.append(w.gettext("%(what)s per hour") % {
                "what": format_money(self.hourly_rate, self.currency, w.language)})
        if self.rollover is Rollover.NONE:
            parts.append(w.gettext("unused hours lapse at the reset"))
        elif self.rollover is Rollover.CAP:
            parts.append(w.gettext("unused hours roll over up to %(hours)s h") % {
                "hours": format_hours(self.rollover_cap_s or 0)})
        else:
            parts.append(w.gettext("unused hours roll over"))
        if self.rollover is not Rollover.NONE and self.rollover_expiry_periods:
            n = self.rollover_expiry_periods
            parts.append(w.gettext(per[1] if n == 1 else per[2]) % {"n": n})
        if self.overage is Overage.BILL:
            rate = self.overage_rate
            shown = format_money(rate, self.currency, w.language) if self.currency and rate is not None else rate
            parts.append(w.gettext("hours over are billed at %(rate)s/h") % {"rate": shown})
        else:
            parts.append(w.gettext("hours over are carried into the next period"))
        parts.append(self.rounding.describe(w))
        return "; ".join(parts)
