import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A certificate and its key, as PEM, and where they are on disk. */
export interface Issued {
  cert: Buffer;
  key: Buffer;
  certFile: string;
  keyFile: string;
}

/**
 * Certificates made at test time with the `openssl` command line: a CA (and a second, unrelated one), a
 * server certificate for 127.0.0.1 / localhost, and client certificates signed by either CA, optionally
 * already expired (`openssl ca -startdate/-enddate`: openssl 3.0's `x509` cannot backdate).
 */
export class TestCertificates {
  readonly dir = mkdtempSync(join(tmpdir(), "openwop-tls-"));
  private serial = 1;

  /** A self-signed CA named `name`. */
  ca(name: string): Issued {
    const { keyFile, certFile } = this.paths(name);
    this.openssl([
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-subj",
      `/CN=${name}`,
      "-days",
      "2",
    ]);
    return this.read(name);
  }

  /** A leaf certificate signed by `ca`: `subject` like `/CN=agent/O=Acme`, `san` like `DNS:localhost,IP:127.0.0.1`. */
  leaf(
    name: string,
    ca: Issued,
    subject: string,
    options: { san?: string; client?: boolean; expired?: boolean } = {},
  ): Issued {
    const { keyFile, certFile } = this.paths(name);
    const csr = join(this.dir, `${name}.csr`);
    this.openssl([
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      csr,
      "-subj",
      subject,
    ]);
    const ext = join(this.dir, `${name}.ext`);
    const usage = options.client ? "clientAuth" : "serverAuth";
    writeFileSync(
      ext,
      `[ext]\nbasicConstraints=CA:FALSE\nextendedKeyUsage=${usage}\n${options.san ? `subjectAltName=${options.san}\n` : ""}`,
    );
    if (options.expired) {
      // `openssl ca` is the 3.0 way to set both dates: a throwaway database per certificate.
      const db = join(this.dir, `${name}.db`);
      writeFileSync(db, "");
      const conf = join(this.dir, `${name}.cnf`);
      writeFileSync(
        conf,
        `[ca]\ndefault_ca=c\n[c]\ndatabase=${db}\nnew_certs_dir=${this.dir}\nserial=${join(this.dir, `${name}.serial`)}\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\norganizationName=optional\n`,
      );
      writeFileSync(join(this.dir, `${name}.serial`), `${(1000 + this.serial++).toString(16).padStart(4, "0")}\n`);
      this.openssl([
        "ca",
        "-batch",
        "-notext",
        "-config",
        conf,
        "-cert",
        ca.certFile,
        "-keyfile",
        ca.keyFile,
        "-in",
        csr,
        "-out",
        certFile,
        "-startdate",
        "20200101000000Z",
        "-enddate",
        "20200102000000Z",
        "-extfile",
        ext,
        "-extensions",
        "ext",
      ]);
    } else {
      this.openssl([
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca.certFile,
        "-CAkey",
        ca.keyFile,
        "-set_serial",
        String(this.serial++),
        "-days",
        "2",
        "-sha256",
        "-extfile",
        ext,
        "-extensions",
        "ext",
        "-out",
        certFile,
      ]);
    }
    return this.read(name);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private paths(name: string): { keyFile: string; certFile: string } {
    return { keyFile: join(this.dir, `${name}.key`), certFile: join(this.dir, `${name}.crt`) };
  }

  private read(name: string): Issued {
    const { keyFile, certFile } = this.paths(name);
    return { cert: readFileSync(certFile), key: readFileSync(keyFile), certFile, keyFile };
  }

  private openssl(args: string[]): void {
    execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  }
}
