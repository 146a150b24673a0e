#!/usr/bin/env python3
"""Regenerate every file under examples/lab/sources/ deterministically.

    pip install duckdb
    python3 examples/lab/make_sources.py

No randomness and no clock: every value is a fixed function of the row index, so running the
script twice produces the same rows. DuckDB writes the CSV files (header row, ISO dates and
timestamps) and the Parquet file (`COPY ... (FORMAT PARQUET)`).

Story (Q1 2024): plants manufacture batches (mes.batches); a release sample per completed batch
is sent to a QC lab (lims.samples) and measured there for four analytes (lims.results, Parquet).
Reference data: sites, instruments and per-product specification limits (ref.*).
"""

from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"

# ---------------------------------------------------------------------------------------------
# ref: sites, instruments, specs
# ---------------------------------------------------------------------------------------------
SITES = [
    # site_code, site_name, country, region, site_type, opened_on, active
    ("OXF", "Oxford Analytical Lab", "GB", "EMEA", "lab", date(2012, 4, 2), True),
    ("CAM", "Cambridge Bioassay Lab", "GB", "EMEA", "lab", date(2015, 9, 14), True),
    ("BSL", "Basel Campus", "CH", "EMEA", "campus", date(2008, 1, 7), True),
    ("LYO", "Lyon Fill-Finish Plant", "FR", "EMEA", "plant", date(2010, 6, 1), True),
    ("CRK", "Cork API Plant", "IE", "EMEA", "plant", date(2016, 3, 21), True),
    ("MUC", "Munich Pilot Plant", "DE", "EMEA", "plant", date(2005, 10, 3), False),
    ("BOS", "Boston QC Lab", "US", "AMER", "lab", date(2011, 2, 14), True),
    ("RTP", "Research Triangle Plant", "US", "AMER", "plant", date(2014, 8, 4), True),
    ("SGP", "Singapore Campus", "SG", "APAC", "campus", date(2018, 1, 15), True),
    ("TKY", "Tokyo QC Lab", "JP", "APAC", "lab", date(2019, 11, 5), True),
]

INSTRUMENTS = [
    # instrument_id, site_code, instrument_type, vendor, installed_on, last_calibrated_on, interval days
    ("HPLC-OXF-01", "OXF", "HPLC", "Agilent", date(2019, 5, 6), date(2024, 1, 8), 180),
    ("KF-OXF-01", "OXF", "Karl Fischer", "Metrohm", date(2020, 2, 17), date(2024, 1, 2), 90),
    ("PH-OXF-01", "OXF", "pH meter", "Mettler Toledo", date(2021, 7, 12), date(2024, 3, 1), 30),
    ("HPLC-BOS-01", "BOS", "HPLC", "Waters", date(2018, 9, 3), date(2023, 12, 11), 180),
    ("KF-BOS-01", "BOS", "Karl Fischer", "Metrohm", date(2018, 9, 3), date(2024, 1, 15), 90),
    ("PH-BOS-01", "BOS", "pH meter", "Mettler Toledo", date(2022, 1, 10), date(2024, 3, 4), 30),
    ("HPLC-SGP-01", "SGP", "HPLC", "Shimadzu", date(2020, 6, 22), date(2024, 2, 5), 180),
    ("KF-SGP-01", "SGP", "Karl Fischer", "Metrohm", date(2020, 6, 22), date(2024, 1, 29), 90),
    ("PH-SGP-01", "SGP", "pH meter", "Mettler Toledo", date(2023, 4, 3), date(2024, 3, 11), 30),
    ("LCMS-CAM-01", "CAM", "LC-MS", "Waters", date(2021, 11, 29), date(2023, 12, 18), 180),
    ("UV-TKY-01", "TKY", "UV-Vis", "Shimadzu", date(2020, 3, 9), date(2023, 8, 21), 180),
    ("HPLC-BSL-01", "BSL", "HPLC", "Agilent", date(2017, 4, 24), date(2024, 2, 19), 180),
]

ANALYTES = ["assay_purity", "water_content", "ph", "impurity_a"]
UNITS = {"assay_purity": "%", "water_content": "%", "ph": "pH", "impurity_a": "%"}
INSTRUMENT_TYPE = {"assay_purity": "HPLC", "water_content": "KF", "ph": "PH", "impurity_a": "HPLC"}

# Same analyte, different limits per product: joining results to specs on analyte alone would
# multiply every result by three (tests/result_facts_no_fanout.sql catches exactly that).
SPECS = {
    # product_code: {analyte: (lower, upper)}
    "PX-100": {"assay_purity": (98.0, 102.0), "water_content": (0.0, 0.5), "ph": (6.5, 7.5), "impurity_a": (0.0, 0.15)},
    "PX-200": {"assay_purity": (97.0, 103.0), "water_content": (0.0, 1.0), "ph": (5.0, 6.0), "impurity_a": (0.0, 0.30)},
    "PX-300": {"assay_purity": (95.0, 105.0), "water_content": (0.0, 2.0), "ph": (7.0, 8.0), "impurity_a": (0.0, 0.50)},
}
PRODUCTS = list(SPECS)
PLANNED_KG = {"PX-100": 250.0, "PX-200": 400.0, "PX-300": 120.0}

# ---------------------------------------------------------------------------------------------
# mes: batches
# ---------------------------------------------------------------------------------------------
PLANTS = ["LYO", "CRK", "RTP", "SGP", "BSL"]
# QC lab that tests each plant's release samples.
TESTING_LAB = {"LYO": "OXF", "CRK": "OXF", "BSL": "OXF", "RTP": "BOS", "SGP": "SGP"}
# Hours between sample collection and receipt at the lab (courier vs. on-site lab), and the
# lab's typical queue before a received sample is first put on an instrument.
TRANSIT_HOURS = {"OXF": 30, "BOS": 6, "SGP": 4}
QUEUE_HOURS = {"OXF": 20, "BOS": 9, "SGP": 3}

N_BATCHES = 18
ABORTED = {9}
IN_PROGRESS = {17, 18}
NO_SAMPLE_YET = {16}
PARTIAL_RESULTS = {15: ["assay_purity", "water_content"]}  # the lab is still working on it
# (batch, analyte) -> measured value forcing an out-of-specification result.
OUT_OF_SPEC = {(7, "impurity_a"): 0.21, (12, "water_content"): 2.4}
# (batch, analyte) measured twice: the first run was invalidated (system suitability failure,
# electrode drift, ...), the retest the next day is the valid result.
RETESTED = {(4, "ph"), (10, "assay_purity"), (13, "water_content")}


def batch_rows():
    rows = []
    for i in range(1, N_BATCHES + 1):
        product = PRODUCTS[(i - 1) % len(PRODUCTS)]
        site = PLANTS[(i - 1) % len(PLANTS)]
        started = datetime(2024, 1, 2, 6, 0) + timedelta(days=5 * (i - 1), hours=2 * (i % 3))
        planned = PLANNED_KG[product]
        if i in ABORTED:
            status, completed, yielded = "aborted", started + timedelta(hours=19), 0.0
        elif i in IN_PROGRESS:
            status, completed, yielded = "in_progress", None, None
        else:
            status = "completed"
            completed = started + timedelta(days=3, hours=6 * (i % 4))
            yielded = round(planned * (0.90 + ((i * 7) % 9) / 100.0), 1)
        rows.append((f"B24-{i:03d}", product, site, started, completed, planned, yielded, status))
    return rows


def measured_value(i, analyte, product, attempt):
    if attempt == 0 and (i, analyte) in RETESTED:
        # invalidated run: value recorded but not usable (and deliberately odd)
        lo, hi = SPECS[product][analyte]
        return round(hi * 1.3 if analyte != "ph" else hi + 1.7, 3)
    if (i, analyte) in OUT_OF_SPEC:
        return OUT_OF_SPEC[(i, analyte)]
    lo, hi = SPECS[product][analyte]
    if analyte in ("water_content", "impurity_a"):
        # one-sided limits: well below the upper limit
        return round(hi * (0.35 + ((i * 13) % 7) / 20.0), 3)
    mid, half = (lo + hi) / 2.0, (hi - lo) / 2.0
    return round(mid + half * (((i * 17 + len(analyte)) % 9) - 4) / 10.0, 3)


def lims_rows(batches):
    samples, results = [], []
    result_no = 0
    for (batch_id, product, site, started, completed, planned, yielded, status) in batches:
        i = int(batch_id[-3:])
        if status != "completed" or i in NO_SAMPLE_YET:
            continue
        lab = TESTING_LAB[site]
        sample_id = f"S24-{len(samples) + 1:04d}"
        collected = completed + timedelta(hours=2)
        received = collected + timedelta(hours=TRANSIT_HOURS[lab])
        analyst = ["a.khan", "j.moreau", "l.chen", "m.okafor"][i % 4]
        samples.append((sample_id, batch_id, product, lab, "release", collected, received))
        for k, analyte in enumerate(PARTIAL_RESULTS.get(i, ANALYTES)):
            instrument = f"{INSTRUMENT_TYPE[analyte]}-{lab}-01"
            # attempt 0 is the first run; a retest (attempt 1) follows a day later
            attempts = [0, 1] if (i, analyte) in RETESTED else [0]
            for attempt in attempts:
                result_no += 1
                queue = QUEUE_HOURS[lab] + 4 * (i % 3)
                measured = received + timedelta(hours=queue + 2 * k + 24 * attempt)
                state = "invalidated" if attempt == 0 and (i, analyte) in RETESTED else "valid"
                results.append((
                    f"R24-{result_no:05d}", sample_id, instrument, analyte,
                    measured_value(i, analyte, product, attempt), UNITS[analyte], measured, state, analyst,
                ))
    return samples, results


def write(con, table, columns, rows, path, fmt):
    con.execute(f"create or replace table {table} ({', '.join(f'{n} {t}' for n, t in columns)})")
    placeholders = ", ".join("?" for _ in columns)
    con.executemany(f"insert into {table} values ({placeholders})", rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    order = columns[0][0]
    if fmt == "csv":
        con.execute(f"copy (select * from {table} order by {order}) to '{path}' (format csv, header true)")
    else:
        con.execute(f"copy (select * from {table} order by {order}) to '{path}' (format parquet)")
    print(f"wrote {path.relative_to(HERE)} ({len(rows)} rows)")


def main():
    con = duckdb.connect()
    con.execute("set threads = 1")
    batches = batch_rows()
    samples, results = lims_rows(batches)
    spec_rows = [
        (product, analyte, UNITS[analyte], lo, hi)
        for product, limits in SPECS.items()
        for analyte, (lo, hi) in limits.items()
    ]

    write(con, "sites", [("site_code", "varchar"), ("site_name", "varchar"), ("country", "varchar"),
                         ("region", "varchar"), ("site_type", "varchar"), ("opened_on", "date"),
                         ("active", "boolean")],
          SITES, SOURCES / "ref" / "sites.csv", "csv")
    write(con, "instruments", [("instrument_id", "varchar"), ("site_code", "varchar"),
                               ("instrument_type", "varchar"), ("vendor", "varchar"),
                               ("installed_on", "date"), ("last_calibrated_on", "date"),
                               ("calibration_interval_days", "integer")],
          INSTRUMENTS, SOURCES / "ref" / "instruments.csv", "csv")
    write(con, "specs", [("product_code", "varchar"), ("analyte", "varchar"), ("unit", "varchar"),
                         ("lower_limit", "double"), ("upper_limit", "double")],
          spec_rows, SOURCES / "ref" / "specs.csv", "csv")
    write(con, "batches", [("batch_id", "varchar"), ("product_code", "varchar"), ("site_code", "varchar"),
                           ("started_at", "timestamp"), ("completed_at", "timestamp"),
                           ("planned_kg", "double"), ("yield_kg", "double"), ("status", "varchar")],
          batches, SOURCES / "mes" / "batches.csv", "csv")
    write(con, "samples", [("sample_id", "varchar"), ("batch_id", "varchar"), ("product_code", "varchar"),
                           ("lab_site_code", "varchar"), ("sample_type", "varchar"),
                           ("collected_at", "timestamp"), ("received_at", "timestamp")],
          samples, SOURCES / "lims" / "samples.csv", "csv")
    write(con, "results", [("result_id", "varchar"), ("sample_id", "varchar"), ("instrument_id", "varchar"),
                           ("analyte", "varchar"), ("result_value", "double"), ("unit", "varchar"),
                           ("measured_at", "timestamp"), ("result_status", "varchar"),
                           ("analyst", "varchar")],
          results, SOURCES / "lims" / "results.parquet", "parquet")


if __name__ == "__main__":
    main()
