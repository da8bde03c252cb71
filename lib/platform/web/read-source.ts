/** No file is read with fs in a web page: this class is never made (GgufFile.mode compares with it). */
export class ReadSource {
  private constructor() {}
}
