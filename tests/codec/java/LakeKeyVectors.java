// Prints the known answers of tests/codec/test_lake_keys.py from the Fluss Java client's own
// encoders and bucket functions (the classes ship in the fluss-server jar of a Fluss release):
//
//   javac -cp fluss-server-0.9.1-incubating.jar -d /tmp/lkv LakeKeyVectors.java
//   java -cp fluss-server-0.9.1-incubating.jar:/tmp/lkv LakeKeyVectors
//
// One line a key: format, case name, key hex, then the bucket under the format's bucketing
// function for 1, 7, 16 and 100 buckets.
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.fluss.bucketing.BucketingFunction;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.config.TableConfig;
import org.apache.fluss.metadata.DataLakeFormat;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.row.TimestampNtz;
import org.apache.fluss.row.encode.KeyEncoder;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DataTypes;
import org.apache.fluss.types.RowType;

public class LakeKeyVectors {
    static final int[] NS = {1, 7, 16, 100};

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static void emit(DataLakeFormat fmt, String name, DataType[] types, Object... values) {
        String[] names = new String[types.length];
        for (int i = 0; i < types.length; i++) names[i] = "f" + i;
        RowType rt = RowType.of(types, names);
        KeyEncoder enc = KeyEncoder.of(rt, Arrays.asList(names), fmt);
        byte[] key = enc.encodeKey(GenericRow.of(values));
        BucketingFunction fn = BucketingFunction.of(fmt);
        StringBuilder sb = new StringBuilder();
        sb.append(fmt).append('|').append(name).append('|').append(hex(key));
        for (int n : NS) sb.append('|').append(fn.bucketing(key, n));
        System.out.println(sb);
    }

    static BinaryString s(String v) { return BinaryString.fromString(v); }

    static void factory(String name, int version, boolean sameBucketKey) {
        // primary key (a INT, b STRING); bucket key (a) unless sameBucketKey
        RowType rt = RowType.of(new DataType[] {DataTypes.INT(), DataTypes.STRING()}, new String[] {"a", "b"});
        Map<String, String> props = new HashMap<>();
        props.put("table.datalake.format", "paimon");
        if (version > 0) props.put("table.kv.format-version", String.valueOf(version));
        TableConfig conf = new TableConfig(Configuration.fromMap(props));
        List<String> pk = Arrays.asList("a", "b");
        KeyEncoder enc = KeyEncoder.ofPrimaryKeyEncoder(rt, pk, conf, sameBucketKey);
        byte[] key = enc.encodeKey(GenericRow.of(7, s("hi")));
        System.out.println("FACTORY|" + name + "|" + hex(key));
    }

    public static void main(String[] args) {
        DataLakeFormat P = DataLakeFormat.PAIMON;
        DataLakeFormat I = DataLakeFormat.ICEBERG;
        // the row of Fluss's PaimonKeyEncoderTest
        emit(P, "all_types", new DataType[] {
                DataTypes.BOOLEAN(), DataTypes.TINYINT(), DataTypes.SMALLINT(), DataTypes.INT(),
                DataTypes.BIGINT(), DataTypes.FLOAT(), DataTypes.DOUBLE(), DataTypes.DATE(),
                DataTypes.TIME(), DataTypes.BINARY(20), DataTypes.BYTES(), DataTypes.CHAR(2),
                DataTypes.STRING(), DataTypes.DECIMAL(5, 2), DataTypes.DECIMAL(20, 0),
                DataTypes.TIMESTAMP(1), DataTypes.TIMESTAMP(5), DataTypes.TIMESTAMP_LTZ(1),
                DataTypes.TIMESTAMP_LTZ(5)},
                true, (byte) 2, (short) 10, 100, new java.math.BigInteger("12345678901234567890").longValue(),
                13.2f, 15.21d, 19655, 34200000, "1234567890".getBytes(StandardCharsets.UTF_8),
                "20".getBytes(StandardCharsets.UTF_8), s("1"), s("hello"),
                Decimal.fromUnscaledLong(9, 5, 2), Decimal.fromBigDecimal(new BigDecimal(10), 20, 0),
                TimestampNtz.fromMillis(1698235273182L), TimestampNtz.fromMillis(1698235273182L),
                TimestampLtz.fromEpochMillis(1698235273182L, 45678),
                TimestampLtz.fromEpochMillis(1698235273182L, 123456));
        emit(P, "int_42", new DataType[] {DataTypes.INT()}, 42);
        emit(P, "int_string", new DataType[] {DataTypes.INT(), DataTypes.STRING()}, 7, s("hi"));
        emit(P, "string_12", new DataType[] {DataTypes.STRING()}, s("hello world!"));
        emit(P, "string_7", new DataType[] {DataTypes.STRING()}, s("abcdefg"));
        emit(P, "string_8", new DataType[] {DataTypes.STRING()}, s("abcdefgh"));
        emit(P, "string_empty", new DataType[] {DataTypes.STRING()}, s(""));
        emit(P, "string_unicode", new DataType[] {DataTypes.STRING()}, s("h\u00e9llo w\u00f6rld \u2713"));
        emit(P, "negatives", new DataType[] {DataTypes.TINYINT(), DataTypes.SMALLINT(), DataTypes.INT(),
                DataTypes.BIGINT()}, (byte) -3, (short) -2, -5, -1L);
        emit(P, "doubles", new DataType[] {DataTypes.DOUBLE(), DataTypes.FLOAT()}, -0.0d, -1.5f);
        emit(P, "decimal_wide_neg", new DataType[] {DataTypes.DECIMAL(25, 0)},
                Decimal.fromBigDecimal(new BigDecimal("-12345678901234567890123"), 25, 0));
        emit(P, "decimal_38", new DataType[] {DataTypes.DECIMAL(38, 10)},
                Decimal.fromBigDecimal(new BigDecimal("1234567890123456789012345678.0123456789"), 38, 10));
        emit(P, "decimal_compact_neg", new DataType[] {DataTypes.DECIMAL(10, 2)},
                Decimal.fromBigDecimal(new BigDecimal("-123.45"), 10, 2));
        emit(P, "ts_neg", new DataType[] {DataTypes.TIMESTAMP(6), DataTypes.TIMESTAMP_LTZ(9)},
                TimestampNtz.fromMillis(-1500L, 250000), TimestampLtz.fromEpochMillis(-1L, 999999));
        emit(P, "ts_compact", new DataType[] {DataTypes.TIMESTAMP(3), DataTypes.TIMESTAMP_LTZ(0)},
                TimestampNtz.fromMillis(-1500L), TimestampLtz.fromEpochMillis(1698235273000L));
        emit(P, "mixed_var", new DataType[] {DataTypes.STRING(), DataTypes.INT(), DataTypes.BYTES(),
                DataTypes.STRING()}, s("a longer first key"), 5, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9}, s("x"));
        DataType[] wide = new DataType[57];
        Object[] wideValues = new Object[57];
        for (int i = 0; i < 57; i++) { wide[i] = DataTypes.INT(); wideValues[i] = i * 1000 - 7; }
        emit(P, "int_x57", wide, wideValues);
        emit(P, "nullable_null", new DataType[] {DataTypes.INT(), DataTypes.STRING()}, 3, null);

        emit(I, "int_34", new DataType[] {DataTypes.INT()}, 34);
        emit(I, "bigint_34", new DataType[] {DataTypes.BIGINT()}, 34L);
        emit(I, "int_neg", new DataType[] {DataTypes.INT()}, -1);
        emit(I, "decimal_14_20", new DataType[] {DataTypes.DECIMAL(4, 2)}, Decimal.fromUnscaledLong(1420, 4, 2));
        emit(I, "decimal_38_neg", new DataType[] {DataTypes.DECIMAL(38, 2)},
                Decimal.fromBigDecimal(new BigDecimal("-123456789012345678901234567890.12"), 38, 2));
        emit(I, "date_17486", new DataType[] {DataTypes.DATE()}, 17486);
        emit(I, "time_81068000", new DataType[] {DataTypes.TIME()}, 81068000);
        emit(I, "ts_1510871468000", new DataType[] {DataTypes.TIMESTAMP(6)}, TimestampNtz.fromMillis(1510871468000L));
        emit(I, "ts_micro", new DataType[] {DataTypes.TIMESTAMP(6)}, TimestampNtz.fromMillis(1510871468000L, 1000));
        emit(I, "ts_neg", new DataType[] {DataTypes.TIMESTAMP(9)}, TimestampNtz.fromMillis(-1500L, 250999));
        emit(I, "string_iceberg", new DataType[] {DataTypes.STRING()}, s("iceberg"));
        emit(I, "string_unicode", new DataType[] {DataTypes.STRING()}, s("h\u00e9llo w\u00f6rld \u2713"));
        emit(I, "char_x", new DataType[] {DataTypes.CHAR(3)}, s("abc"));
        emit(I, "binary_0123", new DataType[] {DataTypes.BINARY(4)}, new byte[] {0, 1, 2, 3});
        emit(I, "bytes_0123", new DataType[] {DataTypes.BYTES()}, new byte[] {0, 1, 2, 3});
        emit(I, "float", new DataType[] {DataTypes.FLOAT()}, 1.5f);
        emit(I, "double", new DataType[] {DataTypes.DOUBLE()}, -2.25d);

        factory("v2_bucket_key_a", 2, false);
        factory("v2_default_bucket_key", 2, true);
        factory("v1_bucket_key_a", 1, false);
        factory("unset_bucket_key_a", 0, false);
    }
}
