"""Column shapes the compute revisions share."""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# Microseconds on MySQL too, so records written in one second keep their order.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
