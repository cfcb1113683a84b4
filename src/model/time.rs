//! Instants as the database clock writes them: UTC, `YYYY-MM-DDTHH:MM:SS.sssZ`, which sort
//! lexically in time order (`strftime('%Y-%m-%dT%H:%M:%fZ', …)`). A time a client sends (ISO 8601
//! with a zone) is brought to that form before it is stored or compared, so a time written with
//! an offset compares with the database clock as the instant it names.

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d` (Howard Hinnant's
/// days-from-civil).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `(y, m, d)` `days` after 1970-01-01 (Howard Hinnant's civil-from-days).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The number of days of month `m` of year `y`.
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

const DAY_MS: i64 = 86_400_000;
/// The first and last instants the database clock's form holds: 0000-01-01T00:00:00.000Z and
/// 9999-12-31T23:59:59.999Z.
const FIRST_MS: i64 = -62_167_219_200_000;
const LAST_MS: i64 = 253_402_300_799_999;

/// An instant in milliseconds since the Unix epoch, written as the database clock writes times;
/// `None` outside the years 0000–9999 (which that form cannot hold).
pub fn format_ms(epoch_ms: i64) -> Option<String> {
    if !(FIRST_MS..=LAST_MS).contains(&epoch_ms) {
        return None;
    }
    let (days, ms) = (epoch_ms.div_euclid(DAY_MS), epoch_ms.rem_euclid(DAY_MS));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1_000 % 60, ms % 1_000);
    Some(format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z"))
}

/// Reads a client's ISO 8601 time: a date (`YYYY-MM-DD`, its midnight UTC) or a date and time
/// with a zone (`YYYY-MM-DDTHH:MM[:SS[.fraction]]` then `Z` or `±HH:MM`), every part in its
/// range (the day within its month, hours 00–23). Returns milliseconds since the Unix epoch
/// (a fraction beyond milliseconds is cut), or why it is not such a time.
pub fn parse_iso(raw: &str) -> Result<i64, &'static str> {
    const EXPECTED: &str =
        "Expected an ISO 8601 date-time with a time zone, e.g. 2030-06-15T09:00:00Z or 2030-06-15T11:00:00+02:00";
    let b = raw.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().all(u8::is_ascii_digit).then(|| digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let (Some(y), Some(m), Some(d)) = (num(0, 4), num(5, 2), num(8, 2)) else { return Err(EXPECTED) };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Err(EXPECTED);
    }
    if !(1..=12).contains(&m) || !(1..=days_in_month(y, m)).contains(&d) {
        return Err("Not a calendar date");
    }
    let day_ms = days_from_civil(y, m, d) * DAY_MS;
    if b.len() == 10 {
        return Ok(day_ms);
    }
    let (Some(h), Some(min)) = (num(11, 2), num(14, 2)) else { return Err(EXPECTED) };
    if b.get(10) != Some(&b'T') || b.get(13) != Some(&b':') {
        return Err(EXPECTED);
    }
    let mut i = 16;
    let (mut s, mut milli) = (0, 0);
    if b.get(i) == Some(&b':') {
        s = num(i + 1, 2).ok_or(EXPECTED)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return Err(EXPECTED);
            }
            // Milliseconds: the fraction's first three digits (padded with zeros).
            let fraction = &b[start..i];
            milli = (0..3).fold(0, |n, k| n * 10 + fraction.get(k).map_or(0, |d| i64::from(d - b'0')));
        }
    }
    if h > 23 || min > 59 || s > 59 {
        return Err("Not a time of day");
    }
    let offset_min = match b.get(i) {
        Some(b'Z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b.get(i + 3) == Some(&b':') => {
            let (Some(oh), Some(om)) = (num(i + 1, 2), num(i + 4, 2)) else { return Err(EXPECTED) };
            if oh > 23 || om > 59 {
                return Err("Not a time zone offset");
            }
            if *sign == b'+' {
                oh * 60 + om
            } else {
                -(oh * 60 + om)
            }
        }
        _ => return Err(EXPECTED),
    };
    Ok(day_ms + ((h * 60 + min - offset_min) * 60 + s) * 1_000 + milli)
}

/// A client's ISO 8601 time ([`parse_iso`]) as the database clock writes times.
pub fn canonical(raw: &str) -> Result<String, &'static str> {
    format_ms(parse_iso(raw)?).ok_or("Out of range: the time must fall within the years 0000 to 9999 (UTC)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates_convert_both_ways() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for days in [-800_000, -1, 0, 59, 60, 11_016, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days}");
        }
    }

    #[test]
    fn instants_are_written_as_the_database_clock_writes_them() {
        assert_eq!(format_ms(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(format_ms(1_798_761_599_999).as_deref(), Some("2026-12-31T23:59:59.999Z"));
        assert_eq!(format_ms(-1).as_deref(), Some("1969-12-31T23:59:59.999Z"));
        assert_eq!(format_ms(253_402_300_799_999).as_deref(), Some("9999-12-31T23:59:59.999Z"));
        assert_eq!(format_ms(253_402_300_800_000), None, "year 10000");
        assert_eq!(format_ms(-62_167_219_200_000).as_deref(), Some("0000-01-01T00:00:00.000Z"));
        assert_eq!(format_ms(-62_167_219_200_001), None, "before year 0");
        assert_eq!((format_ms(i64::MAX), format_ms(i64::MIN)), (None, None));
    }

    #[test]
    fn client_times_are_brought_to_utc() {
        let ok = |raw: &str| canonical(raw).unwrap();
        assert_eq!(ok("2030-06-15T09:00:00Z"), "2030-06-15T09:00:00.000Z");
        assert_eq!(ok("2030-06-15T09:00Z"), "2030-06-15T09:00:00.000Z");
        assert_eq!(ok("2030-06-15"), "2030-06-15T00:00:00.000Z");
        assert_eq!(ok("2030-06-15T09:00:00.1Z"), "2030-06-15T09:00:00.100Z");
        assert_eq!(ok("2030-06-15T09:00:00.123456Z"), "2030-06-15T09:00:00.123Z", "cut to milliseconds");
        assert_eq!(ok("2030-06-15T11:30:00+02:30"), "2030-06-15T09:00:00.000Z");
        assert_eq!(ok("2030-06-15T09:00:00-00:00"), "2030-06-15T09:00:00.000Z");
        assert_eq!(ok("2030-01-01T01:00:00+02:00"), "2029-12-31T23:00:00.000Z", "across a year");
        assert_eq!(ok("2028-02-28T23:00:00-01:00"), "2028-02-29T00:00:00.000Z", "onto a leap day");
        assert_eq!(ok("2000-02-29"), "2000-02-29T00:00:00.000Z");
        assert_eq!(ok("9999-12-31T23:59:59.999Z"), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for raw in [
            "",
            "tomorrow",
            "2030-06-15T09:00:00",
            "2030-06-15T09:00",
            "2030-06-15 09:00:00Z",
            "2030-06-15t09:00:00z",
            "20300615T090000Z",
            "2030-6-15",
            "2030-06-15T9:00Z",
            "2030-06-15T09:00:00.Z",
            "2030-06-15T09:00:00+0200",
            "2030-06-15T09:00:00+02",
            "2030-06-15T09:00:00Z ",
            " 2030-06-15",
            "+2030-06-15",
            "2030-06-15T09:00:00ZZ",
        ] {
            assert!(canonical(raw).is_err(), "{raw:?}");
        }
        assert_eq!(canonical("2030-02-29"), Err("Not a calendar date"));
        assert_eq!(canonical("1900-02-29"), Err("Not a calendar date"));
        assert_eq!(canonical("2030-04-31"), Err("Not a calendar date"));
        assert_eq!(canonical("2030-13-01"), Err("Not a calendar date"));
        assert_eq!(canonical("2030-00-01"), Err("Not a calendar date"));
        assert_eq!(canonical("2030-01-00"), Err("Not a calendar date"));
        assert_eq!(canonical("2030-06-15T24:00:00Z"), Err("Not a time of day"));
        assert_eq!(canonical("2030-06-15T09:60:00Z"), Err("Not a time of day"));
        assert_eq!(canonical("2030-06-15T09:00:60Z"), Err("Not a time of day"));
        assert_eq!(canonical("2030-06-15T09:00:00+24:00"), Err("Not a time zone offset"));
        assert_eq!(canonical("2030-06-15T09:00:00+01:60"), Err("Not a time zone offset"));
        assert!(canonical("9999-12-31T23:00:00-02:00").unwrap_err().starts_with("Out of range"));
        assert!(canonical("0000-01-01T01:00:00+02:00").unwrap_err().starts_with("Out of range"));
        assert_eq!(canonical("0000-01-01T01:00:00+01:00").as_deref(), Ok("0000-01-01T00:00:00.000Z"));
    }
}
