package dev.gait.hdfs;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.PipelineWatch;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

/**
 * Drives HDFS through its own client for gait, whose load engine is Go.
 * gait runs one of these per cluster and multiplexes its load clients over
 * stdin and stdout; each load client is a channel with a FileSystem of its
 * own (its own DFSClient, lease and connections) and a thread of its own,
 * so channels run at once and the ops of one channel run in order.
 *
 * A request is a header line "CHANNEL SEQ OP PATH LEN\n" and LEN bytes of
 * data (the bytes to write, which gait generates: tardis's synthetic
 * stream); OP is create, write, append, read, mkdir, stat, setrep,
 * decommission or close (the channel). setrep's data is "UP DOWN": the
 * file's replication raised to UP and, once every block has UP replicas,
 * lowered to DOWN and waited for again. decommission's data is "EXCLUDE
 * ADDR\n" and a file's bytes: the DataNode at ADDR (its transfer address) written into the
 * NameNode's exclude file EXCLUDE, the NameNode told (refreshNodes), and
 * once the DataNode is decommissioned, taken back into service the same
 * way. Before that it creates PATH with its data after that line, with a
 * replica on ADDR (a favored node).
 * An answer is "SEQ ok LEN\n" or "SEQ ok LEN ADDRS\n" and LEN bytes (what
 * a read read, else nothing) or "SEQ err MESSAGE\n", in the order the ops
 * end. ADDRS say which DataNodes the op involved: groups of IP addresses
 * joined by commas, the groups by semicolons. For create, write and
 * append each pipeline its blocks went through, in order, as
 * "BLOCKID:IPS" (gait tells a recovery's dropped DataNode from them),
 * "x:IPS" for DataNodes excluded when setting a pipeline up, and the
 * blocks' locations after close (see written); for read the DataNodes it
 * read from (the client's current DataNode after each buffer). While a
 * create, write, append or read runs, "SEQ pipe GROUP\n" says each new
 * group as it is seen (a pipeline "BLOCKID:IPS", a DataNode read from), so
 * that an op gait gives up on at its timeout, which it then answers too
 * late, is still known by the DataNodes it was waiting on. gait times
 * each request from its side.
 *
 * Usage: Client hdfs://namenode:port
 */
public final class Client {
  private final URI uri;
  private final Configuration conf = new Configuration();
  private final OutputStream out;
  private final Map<Long, Channel> channels = new HashMap<>();

  private Client(URI uri, OutputStream out) {
    this.uri = uri;
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: Client hdfs://namenode:port");
      System.exit(2);
    }
    OutputStream out = new BufferedOutputStream(System.out, 1 << 16);
    new Client(URI.create(args[0]), out).serve(new DataInputStream(new BufferedInputStream(System.in, 1 << 16)));
  }

  private final class Channel {
    final long id;
    final ExecutorService thread = Executors.newSingleThreadExecutor();
    FileSystem fs;

    Channel(long id) {
      this.id = id;
    }
  }

  private void serve(DataInputStream in) throws IOException {
    String line;
    while ((line = readLine(in)) != null) {
      String[] f = line.split(" ", 5);
      if (f.length != 5) {
        throw new IOException("bad request header: " + line);
      }
      long id = Long.parseLong(f[0]);
      long seq = Long.parseLong(f[1]);
      String op = f[2];
      Path path = new Path(f[3]);
      byte[] data = new byte[Integer.parseInt(f[4])];
      in.readFully(data);
      Channel ch = channels.computeIfAbsent(id, k -> new Channel(k));
      if (op.equals("close")) {
        channels.remove(id);
      }
      ch.thread.execute(() -> answer(seq, ch, op, path, data));
    }
    for (Channel ch : channels.values()) {
      ch.thread.execute(() -> closeQuietly(ch));
      ch.thread.shutdown();
    }
  }

  private void answer(long id, Channel ch, String op, Path path, byte[] data) {
    byte[] result;
    List<String> involved = new ArrayList<>();
    Consumer<String> seenNow = g -> reply((id + " pipe " + g + "\n").getBytes(StandardCharsets.UTF_8), null);
    try {
      result = run(ch, op, path, data, involved, seenNow);
    } catch (Throwable e) {
      String msg = (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
      reply((id + " err " + msg + "\n").getBytes(StandardCharsets.UTF_8), null);
      return;
    }
    String addrs = involved.isEmpty() ? "" : " " + String.join(";", involved);
    reply((id + " ok " + result.length + addrs + "\n").getBytes(StandardCharsets.UTF_8), result);
  }

  /**
   * Writes data[off, off+len) to o, closes it, and adds to involved what
   * its blocks' pipelines went through: each pipeline a PipelineWatch saw
   * while it wrote ("BLOCKID:IP,..."; a later one of the same block
   * without a DataNode is a pipeline recovery that dropped it), the last
   * one taken after an hflush, when every byte has been acked through it
   * and before close ends the block (one more round trip of an empty
   * packet than close alone); then the NameNode's locations of the
   * file's blocks after close (one getBlockLocations), which alone would
   * not do, as the NameNode lists a replica only once its DataNode has
   * reported it, which may come after close returns. An op that went
   * through more than one pipeline (a recovery, or blocks of its own) is
   * written to the client's log with them.
   */
  private static void written(FileSystem fs, Path path, FSDataOutputStream o, byte[] data, int off, int len,
      List<String> involved, Consumer<String> seenNow) throws IOException {
    long start;
    PipelineWatch watch = new PipelineWatch((DFSOutputStream) o.getWrappedStream(), seenNow);
    List<String> pipes;
    try {
      try (o) {
        start = o.getPos(); // an append's: the file's length before
        o.write(data, off, len);
        o.hflush();
        watch.now();
      }
    } finally {
      pipes = watch.stop();
    }
    involved.addAll(pipes);
    if (pipes.size() > 1) {
      System.err.println("gait: " + path + " went through pipelines " + String.join(" ", pipes));
    }
    Set<String> at = new TreeSet<>();
    for (BlockLocation b : fs.getFileBlockLocations(path, start, len)) {
      for (String name : b.getNames()) { // IP:transfer port
        at.add(name.substring(0, name.lastIndexOf(':')));
      }
    }
    if (!at.isEmpty()) {
      involved.add(String.join(",", at));
    }
  }

  private static final byte[] NONE = new byte[0];

  private byte[] run(Channel ch, String op, Path path, byte[] data, List<String> involved,
      Consumer<String> seenNow) throws IOException {
    if (op.equals("close")) {
      closeQuietly(ch);
      ch.thread.shutdown();
      return NONE;
    }
    if (ch.fs == null) {
      ch.fs = FileSystem.newInstance(uri, conf);
    }
    FileSystem fs = ch.fs;
    switch (op) {
      case "create": // a new file: fails if it exists
        written(fs, path, fs.create(path, false), data, 0, data.length, involved, seenNow);
        return NONE;
      case "write":
        // The file's content replaced as HDFS replaces a file atomically:
        // a file of the channel's own, renamed over it. Creating the file
        // itself with overwrite would take its lease, and a second channel
        // writing the same key meanwhile would fail on it
        // (AlreadyBeingCreatedException) rather than queue behind it.
        Path tmp = new Path(path.getParent(), "." + path.getName() + ".c" + ch.id);
        written(fs, tmp, fs.create(tmp, true), data, 0, data.length, involved, seenNow);
        ((DistributedFileSystem) fs).rename(tmp, path, Options.Rename.OVERWRITE);
        return NONE;
      case "append": // in a new block, so the file's block list grows by one
        written(fs, path, fs.append(path, 4096, null, true), data, 0, data.length, involved, seenNow);
        return NONE;
      case "read":
        try (FSDataInputStream i = fs.open(path)) {
          ByteArrayOutputStream b = new ByteArrayOutputStream();
          Set<String> touched = new TreeSet<>();
          byte[] buf = new byte[1 << 16];
          for (int n; (n = i.read(buf)) > 0; ) {
            b.write(buf, 0, n);
            DatanodeInfo dn = ((HdfsDataInputStream) i).getCurrentDatanode();
            if (dn != null && touched.add(dn.getIpAddr())) {
              seenNow.accept(dn.getIpAddr());
            }
          }
          if (!touched.isEmpty()) {
            involved.add(String.join(",", touched));
          }
          return b.toByteArray();
        }
      case "stat":
        fs.getFileStatus(path);
        return NONE;
      case "mkdir":
        if (!fs.mkdirs(path)) {
          throw new IOException("mkdirs " + path + " returned false");
        }
        return NONE;
      case "setrep": {
        String[] r = new String(data, StandardCharsets.UTF_8).split(" ");
        replicate(fs, path, Short.parseShort(r[0]));
        replicate(fs, path, Short.parseShort(r[1]));
        return NONE;
      }
      case "decommission": {
        int nl = 0;
        while (data[nl] != '\n') {
          nl++;
        }
        String[] r = new String(data, 0, nl, StandardCharsets.UTF_8).split(" ");
        String[] hp = r[1].split(":");
        DistributedFileSystem dfs = (DistributedFileSystem) fs;
        // A new file with a replica on the DataNode to decommission, so
        // that every decommission has a block to move: when the node comes
        // back, the NameNode deletes excess replicas, often its.
        try (FSDataOutputStream o = dfs.create(path, FsPermission.getFileDefault(), false, 4096,
            fs.getDefaultReplication(path), fs.getDefaultBlockSize(path), null,
            new InetSocketAddress[] {new InetSocketAddress(hp[0], Integer.parseInt(hp[1]))})) {
          o.write(data, nl + 1, data.length - nl - 1);
        }
        admin(dfs, Paths.get(r[0]), r[1], true);
        admin(dfs, Paths.get(r[0]), r[1], false);
        return NONE;
      }
      default:
        throw new IOException("unknown op " + op);
    }
  }

  /**
   * How long setrep and decommission wait for the NameNode's state; gait's
   * timeout is usually shorter, but the channel's thread must not wait
   * forever once gait has given up.
   */
  private static final long WAIT_MS = 15 * 60 * 1000;

  private static void pause(long deadline, String what) throws IOException {
    if (System.currentTimeMillis() > deadline) {
      throw new IOException("gave up waiting for " + what);
    }
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted waiting for " + what);
    }
  }

  /** Sets path's replication to n and waits until every block has n replicas. */
  private static void replicate(FileSystem fs, Path path, short n) throws IOException {
    fs.setReplication(path, n);
    long deadline = System.currentTimeMillis() + WAIT_MS;
    for (;;) {
      FileStatus st = fs.getFileStatus(path);
      boolean done = true;
      for (BlockLocation b : fs.getFileBlockLocations(st, 0, st.getLen())) {
        done &= b.getHosts().length == n;
      }
      if (done) {
        return;
      }
      pause(deadline, path + " at " + n + " replicas");
    }
  }

  /**
   * Decommissions the DataNode at addr (out true) or takes it back into
   * service (false) through the NameNode's exclude file, and waits until
   * the NameNode says it is done.
   */
  private static void admin(DistributedFileSystem dfs, java.nio.file.Path exclude, String addr, boolean out)
      throws IOException {
    Files.write(exclude, (out ? addr + "\n" : "").getBytes(StandardCharsets.UTF_8));
    dfs.refreshNodes();
    long deadline = System.currentTimeMillis() + WAIT_MS;
    for (;;) {
      DatanodeInfo dn = null;
      for (DatanodeInfo d : dfs.getDataNodeStats(DatanodeReportType.ALL)) {
        if (d.getXferAddr().equals(addr)) {
          dn = d;
        }
      }
      if (dn == null) {
        throw new IOException("no DataNode at " + addr);
      }
      if (out ? dn.isDecommissioned() : dn.isInService()) {
        return;
      }
      pause(deadline, addr + (out ? " decommissioned" : " in service"));
    }
  }

  private static void closeQuietly(Channel ch) {
    try {
      if (ch.fs != null) {
        ch.fs.close();
      }
    } catch (IOException e) {
      // the channel is gone either way; the cluster may already be down
    }
  }

  private synchronized void reply(byte[] header, byte[] body) {
    try {
      out.write(header);
      if (body != null) {
        out.write(body);
      }
      out.flush();
    } catch (IOException e) {
      System.exit(1); // gait went away
    }
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    int c;
    while ((c = in.read()) != '\n') {
      if (c < 0) {
        return b.length() == 0 ? null : b.toString();
      }
      b.append((char) c);
    }
    return b.toString();
  }
}
