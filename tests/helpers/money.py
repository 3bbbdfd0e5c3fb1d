"""A retainer priced in money, with entries whose amounts are worked out here, not read from the code."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from app.db import get_db
from hourtab.core.accounts import find_account
from hourtab.core.db import transaction
from hourtab.retainers import credits, service
from hourtab.timesheets.models import TimeEntry, Upload
from tests.factories import make_account

NOW = dt.datetime(2026, 12, 5, 9, 0, tzinfo=dt.UTC)
#: Minor units written out here, not read from the code under test.
PLACES = {"EUR": 2, "USD": 2, "JPY": 0, "UZS": 2}
#: (fee, hourly rate, overage rate, a top-up's price) per currency.
PRICES = {
    "EUR": ("3000", "150", "160.50", "700"),
    "USD": ("2500.75", "125.25", "140", "650.10"),
    "JPY": ("480000", "24000", "25500", "100000"),
    "UZS": ("2,300,000.0", "115000.55", "130000", "550000"),
}
#: Seconds per entry: October 12 h (8 h roll over: rollover all), November 33 h of the 28 available
#: (5 h over, billed), December 7.5 h so far. Odd seconds, so that rounding per amount shows.
ENTRIES = {
    dt.date(2026, 10, 6): 21601, dt.date(2026, 10, 7): 21599,
    dt.date(2026, 11, 3): 30017, dt.date(2026, 11, 4): 28800, dt.date(2026, 11, 5): 28800,
    dt.date(2026, 11, 6): 31183,
    dt.date(2026, 12, 1): 13337, dt.date(2026, 12, 2): 13663,
}
HOUR = 3600


def coins(amount: Decimal, currency: str) -> Decimal:
    return amount.quantize(Decimal(1).scaleb(-PLACES[currency]), rounding=ROUND_HALF_UP)


def worth(seconds: int, rate: str, currency: str) -> Decimal:
    return coins(Decimal(seconds) * Decimal(rate) / HOUR, currency)


def money_retainer(app, currency: str, email: str = "ada@example.com") -> str:
    """A retainer priced in ``currency`` with ``ENTRIES`` and a top-up bought in December; its token.
    The account is made unless one with ``email`` exists (a signed-up consultant)."""
    fee, rate, over, topup = PRICES[currency]
    app.config["HOURS_CLOCK"] = lambda: NOW
    with app.app_context():
        db = get_db()
        account = find_account(db, email) or make_account(db, email, "pro", display_name="Ada Consultant")
        with transaction(db):
            upload = Upload(account_id=account.id, filename="x.csv", size_bytes=0, sha256="0" * 64)
            db.add(upload)
            db.flush()
            for n, (day, seconds) in enumerate(ENTRIES.items()):
                start = dt.datetime.combine(day, dt.time(9), tzinfo=dt.UTC)
                db.add(TimeEntry(account_id=account.id, upload_id=upload.id, fingerprint=str(n), start_at=start,
                                 end_at=start + dt.timedelta(seconds=seconds), local_date=day, duration_s=seconds,
                                 client="Acme", description=f"work {n}", source_format="toggl", source_line=n))
            retainer = service.create_retainer(db, account, "Retainer", "Acme", service.parse_terms(
                service.TermsInput(hours="20", start="2026-10-01", rollover="all", overage="bill",
                                   overage_rate=over, fee=fee, hourly_rate=rate, currency=currency)))
            credits.add_credit(db, account, retainer.id, "topup", dt.date(2026, 12, 2), "5", "Extra block",
                               amount=topup)
        return retainer.public_token
