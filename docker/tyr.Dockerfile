# A standalone Týr server (io.blobfs.tyr.server.TyrServerMain) with its data in a volume.
# Built as blobfs/tyr:local by scripts/docker/build-images.sh, whose context holds the
# self-contained server jar Maven makes (blobfs-tyr/target/blobfs-tyr-*-server.jar).
# The default flags bind all interfaces: with host networking that is the host's port 7400.
ARG BASE=blobfs/debian-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY tyr-server.jar /opt/blobfs/tyr-server.jar
# Týr's messages name it; without a UTF-8 locale the JVM prints "T?r".
ENV LANG=C.UTF-8
VOLUME /var/lib/tyr
EXPOSE 7400
ENTRYPOINT ["java", "-jar", "/opt/blobfs/tyr-server.jar"]
CMD ["--data-dir", "/var/lib/tyr", "--bind", "0.0.0.0", "--port", "7400"]
