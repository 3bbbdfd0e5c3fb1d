"""Imports every model module so ``Base.metadata`` knows every table (Alembic, tests)."""

from hourtab import accounts, ratelimit, sessions  # noqa: F401
from hourtab.alerts import models as alert_models  # noqa: F401
from hourtab.db import Base
from hourtab.jobs import models as job_models  # noqa: F401
from hourtab.retainers import models as retainer_models  # noqa: F401
from hourtab.timesheets import models as timesheet_models  # noqa: F401
from incidents import evidence_models  # noqa: F401
from incidents import models as incident_models  # noqa: F401

metadata = Base.metadata
