package org.apache.hadoop.hdfs;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;

/**
 * Watches the pipelines an output stream's blocks go through, for gait's
 * client: every 10 ms it notes the streamer's block and DataNodes when
 * they differ from the last noted. A pipeline recovery (a DataNode that
 * stopped acking within the socket timeout, dropped by the client and
 * perhaps replaced) shows as a later pipeline of the same block without
 * that DataNode; the write waited on it all the same. The stream's own
 * getPipeline would not do: it takes the stream's lock, which write and
 * close hold while they wait for the pipeline. This class is in HDFS's
 * package only to read the streamer's nodes and block, which are
 * package-private; it changes nothing.
 *
 * Each new pipeline is also handed to a listener as it is seen, so that
 * an op cut at gait's timeout, which never answers with its pipelines,
 * still says which DataNodes it was waiting on.
 */
public final class PipelineWatch {
  private static final ScheduledExecutorService POLL = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "gait-pipeline-watch");
    t.setDaemon(true);
    return t;
  });

  private final DataStreamer streamer;
  private final List<String> seen = new ArrayList<>();
  private final ScheduledFuture<?> task;
  private final Consumer<String> seenNow;
  private String last;

  /** Watches out's pipelines; seenNow is told each new one, "BLOCKID:IP,IP,...". */
  public PipelineWatch(DFSOutputStream out, Consumer<String> seenNow) {
    streamer = out.getStreamer();
    this.seenNow = seenNow;
    task = POLL.scheduleAtFixedRate(this::look, 0, 10, TimeUnit.MILLISECONDS);
  }

  private synchronized void look() {
    DatanodeInfo[] nodes = streamer.getNodes();
    ExtendedBlock b = streamer.getBlock();
    if (nodes == null || nodes.length == 0 || b == null) {
      return;
    }
    StringBuilder e = new StringBuilder().append(b.getBlockId()).append(':');
    for (int i = 0; i < nodes.length; i++) {
      e.append(i > 0 ? "," : "").append(nodes[i].getIpAddr());
    }
    String s = e.toString();
    if (!s.equals(last)) {
      seen.add(s);
      last = s;
      seenNow.accept(s);
    }
  }

  /** Notes the pipeline as it is now (call it once the data is acked). */
  public void now() {
    look();
  }

  /**
   * Stops watching and returns the pipelines noted, in order, each
   * "BLOCKID:IP,IP,..."; then "x:IP,..." if the streamer excluded
   * DataNodes it could not set a pipeline up through (each one waited
   * on until it failed).
   */
  public synchronized List<String> stop() {
    task.cancel(false);
    List<String> out = new ArrayList<>(seen);
    DatanodeInfo[] x = streamer.getExcludedNodes();
    if (x != null && x.length > 0) {
      StringBuilder e = new StringBuilder("x:");
      for (int i = 0; i < x.length; i++) {
        e.append(i > 0 ? "," : "").append(x[i].getIpAddr());
      }
      out.add(e.toString());
    }
    return out;
  }
}
