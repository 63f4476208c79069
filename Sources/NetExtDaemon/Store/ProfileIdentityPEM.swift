import Foundation
import NetExtCore
import NIOSSL

/// A profile's PKCS#12 identity (``ProfileIdentity``) as the PEM text NetExt's identity files
/// hold — the certificate chain, leaf first, then the private key —, read with BoringSSL
/// (`NIOSSLPKCS12Bundle`) and checked: the key must belong to the leaf. netextd keeps it in its
/// secret store (mode 600) and the configuration's `identityReference` names that file.
enum ProfileIdentityPEM {
    static func pem(of identity: ProfileIdentity) throws(NetExtError) -> String {
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: Array(identity.pkcs12), passphrase: identity.password.map { Array($0.utf8) })
        } catch {
            throw .invalid("the certificate payload \(identity.payloadUUID) is not a PKCS#12 file NetExt can open with its Password (a wrong password, or a damaged file)")
        }
        guard let leaf = bundle.certificateChain.first else { throw .invalid("the certificate payload \(identity.payloadUUID) holds no certificate") }
        // BoringSSL refuses a key that does not belong to the leaf.
        var check = TLSConfiguration.makeClientConfiguration()
        check.certificateChain = [.certificate(leaf)]
        check.privateKey = .privateKey(bundle.privateKey)
        do { _ = try NIOSSLContext(configuration: check) } catch {
            throw .invalid("the certificate payload \(identity.payloadUUID): its private key does not belong to its first certificate")
        }
        var text = ""
        do {
            for certificate in bundle.certificateChain { text += block("CERTIFICATE", try certificate.toDERBytes()) }
        } catch {
            throw .invalid("the certificate payload \(identity.payloadUUID): a certificate cannot be written out")
        }
        let der: [UInt8]
        do { der = try bundle.privateKey.derBytes } catch {
            throw .invalid("the certificate payload \(identity.payloadUUID): its private key cannot be written out (only RSA and EC keys are taken)")
        }
        // BoringSSL writes the key in its type's own form (PKCS#1 for RSA, SEC 1 for EC, RFC
        // 7468 §10 and §13's labels): the label that reads back as the same key is the one.
        for label in ["EC PRIVATE KEY", "RSA PRIVATE KEY"] {
            let candidate = block(label, der)
            if let key = try? NIOSSLPrivateKey(bytes: Array(candidate.utf8), format: .pem), (try? key.derBytes) == der {
                return text + candidate
            }
        }
        throw .invalid("the certificate payload \(identity.payloadUUID): its private key is neither RSA nor EC")
    }

    /// A PEM block (RFC 7468 §2): the label, base64 in lines of 64.
    static func block(_ label: String, _ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString()
        var lines: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(base64[index..<end])
            index = end
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}
