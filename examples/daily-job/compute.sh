#!/bin/sh
# The daily computation of examples/daily-job: stands for the heavy batch
# the seeds compute once a day. Whatever it writes to $SHEPHERD_RESULT_FILE
# becomes the run's result data, which every scheduler (and
# `shepherd ctl job show`) sees.
set -eu
rows=${REPORT_ROWS:-1000}
echo "computing the report for $SHEPHERD_RUN_KEY (attempt $SHEPHERD_ATTEMPT, scheduled $SHEPHERD_SCHEDULED_TIME) over $rows rows"
sum=$(awk -v n="$rows" 'BEGIN { s = 0; for (i = 1; i <= n; i++) s += i % 97; print s }')
printf '{"day":"%s","rows":%s,"checksum":%s}\n' "$SHEPHERD_RUN_KEY" "$rows" "$sum" >"$SHEPHERD_RESULT_FILE"
echo "done: checksum $sum"
