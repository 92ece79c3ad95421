// Package rowtypes holds the tables and rows of every MySQL type the
// replication tests copy, for the tests of package replication and of its
// sinks: one set of awkward values, so that every sink is proven on the
// same ones. It is for tests only and holds no code.
package rowtypes

// AllTypes is a table with a column of every kind the applier handles.
const AllTypes = `CREATE TABLE rt_types.alltypes (
	id INT PRIMARY KEY,
	ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
	mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
	dec1 DECIMAL(30,10), dec2 DECIMAL(5,0) UNSIGNED, f FLOAT, d DOUBLE,
	dt DATETIME, dt6 DATETIME(6), ts TIMESTAMP(6) NULL DEFAULT NULL, da DATE, tm TIME(3), y YEAR,
	j JSON, b1 BIT(1), b64 BIT(64),
	e ENUM('a', 'b''q', 'c,d', 'ü'), s SET('x', 'y', 'z'),
	vc VARCHAR(50) CHARACTER SET utf8mb4, l1 VARCHAR(50) CHARACTER SET latin1, ch CHAR(10),
	bin BINARY(4), vb VARBINARY(20), bl BLOB, tx TEXT, lt LONGTEXT,
	gbk VARCHAR(20) CHARACTER SET gbk, u16 VARCHAR(10) CHARACTER SET utf16,
	gv BIGINT AS (i * 2) VIRTUAL, gs VARCHAR(60) AS (CONCAT(vc, '!')) PERSISTENT,
	n INT NULL
)`

// Rows insert rows of extreme and awkward values of every type into
// AllTypes.
var Rows = []string{
	// Extremes of every integer width, signed and unsigned.
	`INSERT INTO rt_types.alltypes (id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu) VALUES
		(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615),
		(2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0)`,
	// Exact decimals, floats that do not print round, temporal edge cases.
	`INSERT INTO rt_types.alltypes (id, dec1, dec2, f, d, dt, dt6, ts, da, tm, y) VALUES
		(3, 12345678901234567890.0123456789, 99999, 1.1, 0.1, '1000-01-01 00:00:00', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.123456', '2024-02-29', '-838:59:59.000', 1901),
		(4, -0.0000000001, 0, -3.4e38, 2.2250738585072014e-308, '0000-00-00 00:00:00', '2000-01-01 00:00:00.000001', '1970-01-01 05:30:01.000000', '0000-00-00', '838:59:59.999', 2155),
		(5, 0, 1, 16777217, 1e300, '2026-11-22 12:34:56', '2026-11-22 12:34:56.500000', NOW(6), '1000-01-01', '00:00:00.001', 0)`,
	// JSON (MariaDB: LONGTEXT with a check), BIT, ENUM, SET.
	`INSERT INTO rt_types.alltypes (id, j, b1, b64, e, s) VALUES
		(6, '{"a": [1, 2.50, "x\\"y"], "b": null, "ü": true}', b'1', b'1111111111111111111111111111111111111111111111111111111111111111', 'b''q', 'x,z'),
		(7, '[]', b'0', b'0', 'c,d', ''),
		(8, '"str"', NULL, 9223372036854775808, 'ü', 'x,y,z')`,
	// Strings: quotes, backslashes, NUL, newlines, emoji, other charsets,
	// binary bytes that look like quotes, GBK characters whose second byte
	// is a backslash (0x5C).
	`INSERT INTO rt_types.alltypes (id, vc, l1, ch, bin, vb, bl, tx, lt, gbk, u16) VALUES
		(9, 'it''s a \\ "test"\n\r\t 😀', _latin1 X'636166E9', 'pad  ', X'00270A5C', X'FF00275C22', X'000102031A5C27', 'text\0nul', REPEAT('long ', 20000), X'DF5CB27B', 'ü€😀'),
		(10, '', '', '', X'', X'', X'', '', '', '', ''),
		(11, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
}
