package dev.gait.hbase;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;

/**
 * Drives HBase through its own client for gait, whose load engine is Go.
 * gait runs one of these per cluster and multiplexes its load clients over
 * stdin and stdout; each load client is a channel with a Table of its own
 * on the one shared Connection (as an HBase application shares one) and a
 * thread of its own, so channels run at once and the ops of one channel
 * run in order.
 *
 * First it makes the table: created with the split keys given (if it is
 * not there yet), its regions in start-key order moved to the region
 * servers given, one each, round robin; then it says "ready\n".
 *
 * A request is a header line "CHANNEL SEQ OP ROW LEN\n" and LEN bytes of
 * data; OP is put (the data is the value), get, scan (LEN is 0; the data
 * is the number of rows to scan from ROW, as decimal text) or close (the
 * channel). An answer is "SEQ ok LEN SERVERS\n" and LEN bytes (a get's
 * value; for a scan, nothing), or "SEQ err MESSAGE\n", in the order the
 * ops end. Before an op asks a region server it says "SEQ at SERVER\n"
 * (a scan, for each region server it goes on to), so an op cut at gait's
 * timeout still names where it waited. SERVERS are the host addresses of the region servers holding
 * the rows the op touched, joined by commas: the region locations the
 * client itself went to (cached, as it caches them), so gait can tell the
 * requests that met a slow region server from those that did not.
 *
 * Usage: Client TABLE FAMILY SPLITKEYS SERVERS (comma-separated; the
 * configuration, hbase-site.xml, on the class path)
 */
public final class Client {
  private final Connection conn;
  private final TableName table;
  private final byte[] family;
  private static final byte[] QUALIFIER = "v".getBytes(StandardCharsets.UTF_8);
  private final OutputStream out;
  private final Map<Long, Channel> channels = new HashMap<>();

  private Client(Connection conn, TableName table, byte[] family, OutputStream out) {
    this.conn = conn;
    this.table = table;
    this.family = family;
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: Client TABLE FAMILY SPLITKEYS SERVERS");
      System.exit(2);
    }
    Configuration conf = HBaseConfiguration.create();
    OutputStream out = new BufferedOutputStream(System.out, 1 << 16);
    try (Connection conn = ConnectionFactory.createConnection(conf)) {
      Client c = new Client(conn, TableName.valueOf(args[0]), args[1].getBytes(StandardCharsets.UTF_8), out);
      c.setup(split(args[2]), split(args[3]));
      c.reply("ready\n".getBytes(StandardCharsets.UTF_8), null);
      c.serve(new DataInputStream(new BufferedInputStream(System.in, 1 << 16)));
    }
  }

  private static String[] split(String list) {
    return list.isEmpty() ? new String[0] : list.split(",");
  }

  /** Whether e, or an exception that caused it, says the master is still initializing. */
  private static boolean initializing(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (String.valueOf(t).contains("PleaseHoldException")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Creates the table with splitKeys unless it exists, and moves its
   * regions (in start-key order) to servers (host addresses) round robin,
   * waiting until the client's own locator sees each where it belongs.
   */
  private void setup(String[] splitKeys, String[] servers) throws IOException, InterruptedException {
    try (Admin admin = conn.getAdmin(); RegionLocator loc = conn.getRegionLocator(table)) {
      byte[][] splits = new byte[splitKeys.length][];
      for (int i = 0; i < splits.length; i++) {
        splits[i] = splitKeys[i].getBytes(StandardCharsets.UTF_8);
      }
      // A master that is active may still be initializing (on a loaded
      // machine, for minutes, beyond the client's own retries): ask again
      // until gait, which bounds the whole start, gives up.
      while (true) {
        try {
          if (!admin.tableExists(table)) {
            admin.createTable(TableDescriptorBuilder.newBuilder(table)
                .setColumnFamily(ColumnFamilyDescriptorBuilder.of(family)).build(), splits);
          }
          break;
        } catch (IOException e) {
          if (!initializing(e)) {
            throw e;
          }
          System.err.println("the master is initializing; asking again: " + e.getMessage());
          Thread.sleep(2000);
        }
      }
      while (true) {
        boolean placed = true;
        java.util.List<HRegionLocation> regions = loc.getAllRegionLocations();
        regions.sort((a, b) -> org.apache.hadoop.hbase.util.Bytes.compareTo(a.getRegion().getStartKey(), b.getRegion().getStartKey()));
        for (int i = 0; i < regions.size(); i++) {
          HRegionLocation r = regions.get(i);
          String want = servers[i % servers.length];
          if (r.getServerName() != null && r.getServerName().getHostname().equals(want)) {
            continue;
          }
          placed = false;
          for (ServerName sn : admin.getRegionServers()) {
            if (sn.getHostname().equals(want)) {
              System.err.println("moving " + r.getRegion().getEncodedName() + " to " + sn);
              admin.move(r.getRegion().getEncodedNameAsBytes(), sn);
            }
          }
        }
        if (placed) {
          return;
        }
        loc.clearRegionLocationCache();
        Thread.sleep(500);
      }
    }
  }

  private final class Channel {
    final ExecutorService thread = Executors.newSingleThreadExecutor();
    Table t;
    RegionLocator loc;
  }

  private void serve(DataInputStream in) throws IOException, InterruptedException {
    String line;
    while ((line = readLine(in)) != null) {
      String[] f = line.split(" ", 5);
      if (f.length != 5) {
        throw new IOException("bad request header: " + line);
      }
      long id = Long.parseLong(f[0]);
      long seq = Long.parseLong(f[1]);
      String op = f[2];
      byte[] row = f[3].getBytes(StandardCharsets.UTF_8);
      byte[] data = new byte[Integer.parseInt(f[4])];
      in.readFully(data);
      Channel ch = channels.computeIfAbsent(id, k -> new Channel());
      if (op.equals("close")) {
        channels.remove(id);
        ch.thread.execute(() -> {
          close(ch);
          reply((seq + " ok 0 \n").getBytes(StandardCharsets.UTF_8), null);
        });
        ch.thread.shutdown();
        continue;
      }
      ch.thread.execute(() -> answer(seq, ch, op, row, data));
    }
    for (Channel ch : channels.values()) {
      ch.thread.execute(() -> close(ch));
      ch.thread.shutdown();
    }
    for (Channel ch : channels.values()) {
      ch.thread.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  private void answer(long seq, Channel ch, String op, byte[] row, byte[] data) {
    Set<String> servers = new LinkedHashSet<>();
    byte[] result;
    try {
      if (ch.t == null) {
        ch.t = conn.getTable(table);
        ch.loc = conn.getRegionLocator(table);
      }
      result = run(ch, seq, op, row, data, servers);
    } catch (Throwable e) {
      String msg = (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
      reply((seq + " err " + msg + "\n").getBytes(StandardCharsets.UTF_8), null);
      return;
    }
    String header = seq + " ok " + result.length + " " + String.join(",", servers) + "\n";
    reply(header.getBytes(StandardCharsets.UTF_8), result);
  }

  private byte[] run(Channel ch, long seq, String op, byte[] row, byte[] data, Set<String> servers) throws IOException {
    String first = server(ch, row);
    reply((seq + " at " + first + "\n").getBytes(StandardCharsets.UTF_8), null);
    switch (op) {
      case "put": {
        servers.add(first);
        ch.t.put(new Put(row).addColumn(family, QUALIFIER, data));
        return new byte[0];
      }
      case "get": {
        servers.add(first);
        Result r = ch.t.get(new Get(row).addColumn(family, QUALIFIER));
        byte[] v = r.getValue(family, QUALIFIER);
        return v == null ? new byte[0] : v;
      }
      case "scan": {
        // Region by region, naming each region's server before asking it,
        // so a scan cut at its timeout has named every server it waited for
        // (one scanner across regions would name the next only after it
        // answered).
        int left = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
        servers.add(first);
        byte[] from = row;
        while (left > 0) {
          HRegionLocation l = ch.loc.getRegionLocation(from);
          String host = l.getServerName().getHostname();
          if (servers.add(host)) {
            reply((seq + " at " + host + "\n").getBytes(StandardCharsets.UTF_8), null);
          }
          byte[] end = l.getRegion().getEndKey();
          Scan s = new Scan().withStartRow(from).addColumn(family, QUALIFIER).setLimit(left).setCaching(left);
          if (end.length > 0) {
            s.withStopRow(end);
          }
          try (ResultScanner sc = ch.t.getScanner(s)) {
            for (Result r : sc) {
              left--;
            }
          }
          if (end.length == 0) {
            break;
          }
          from = end;
        }
        return new byte[0];
      }
      default:
        throw new IOException("unknown op " + op);
    }
  }

  /** The address of the region server holding row, as the client has it cached. */
  private static String server(Channel ch, byte[] row) throws IOException {
    HRegionLocation l = ch.loc.getRegionLocation(row);
    return l.getServerName().getHostname();
  }

  private static void close(Channel ch) {
    try {
      if (ch.t != null) {
        ch.t.close();
        ch.loc.close();
      }
    } catch (IOException e) {
      // the channel is gone either way
    }
  }

  private synchronized void reply(byte[] header, byte[] data) {
    try {
      out.write(header);
      if (data != null) {
        out.write(data);
      }
      out.flush();
    } catch (IOException e) {
      System.exit(1); // gait has gone
    }
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        return b.toString();
      }
      b.append((char) c);
    }
    return b.length() == 0 ? null : b.toString();
  }
}
