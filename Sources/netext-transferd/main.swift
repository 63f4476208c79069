// The user's background transfer service for NetExtHTTP background sessions
// (URLSessionConfiguration.background(withIdentifier:)): apps start it on demand; see
// docs/background-transfers.md.
import BackgroundTransfers
import Foundation

let options: TransferDaemon.Options
do {
    options = try TransferDaemon.options(Array(CommandLine.arguments.dropFirst()))
} catch {
    let help = CommandLine.arguments.contains("-h") || CommandLine.arguments.contains("--help")
    FileHandle.standardError.write(Data("\(help ? "" : "netext-transferd: ")\(error)\n".utf8))
    exit(help ? 0 : 2)
}
exit(await TransferDaemon.run(options))
