"""Imports every model module so ``Base.metadata`` knows every table (Alembic, tests)."""

from hourtab.alerts import models as alert_models  # noqa: F401
from hourtab.core import (  # noqa: F401
    accounts,
    apitokens,
    jobs,  # noqa: F401
    ratelimit,
    sessions,
)
from hourtab.core.db import Base
from hourtab.invoices import models as invoice_models  # noqa: F401
from hourtab.retainers import models as retainer_models  # noqa: F401
from hourtab.sync import models as sync_models  # noqa: F401
from hourtab.timesheets import models as timesheet_models  # noqa: F401
from incidents.evidence import models as evidence_models  # noqa: F401
from incidents.writeups import models as incident_models  # noqa: F401

metadata = Base.metadata
