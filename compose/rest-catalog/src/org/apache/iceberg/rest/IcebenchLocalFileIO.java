package org.apache.iceberg.rest;

import java.io.File;
import java.net.URI;
import org.apache.iceberg.Files;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Local files (file: URIs or paths) without Hadoop, whose FileIO Iceberg's core leaves to it. A
 * file keeps the location it was asked by (Files.localInput would drop `file://`): a catalog
 * compares the metadata location it committed with the one it reads back.
 */
public class IcebenchLocalFileIO implements FileIO {
  @Override
  public InputFile newInputFile(String path) {
    InputFile file = Files.localInput(local(path));
    return new InputFile() {
      @Override
      public long getLength() {
        return file.getLength();
      }

      @Override
      public SeekableInputStream newStream() {
        return file.newStream();
      }

      @Override
      public String location() {
        return path;
      }

      @Override
      public boolean exists() {
        return file.exists();
      }
    };
  }

  @Override
  public OutputFile newOutputFile(String path) {
    OutputFile file = Files.localOutput(local(path));
    return new OutputFile() {
      @Override
      public PositionOutputStream create() {
        return file.create();
      }

      @Override
      public PositionOutputStream createOrOverwrite() {
        return file.createOrOverwrite();
      }

      @Override
      public String location() {
        return path;
      }

      @Override
      public InputFile toInputFile() {
        return newInputFile(path);
      }
    };
  }

  @Override
  public void deleteFile(String path) {
    File file = local(path);
    if (file.exists() && !file.delete()) {
      throw new IllegalStateException("cannot delete " + path);
    }
  }

  private static File local(String path) {
    return path.startsWith("file:") ? new File(URI.create(path)) : new File(path);
  }
}
