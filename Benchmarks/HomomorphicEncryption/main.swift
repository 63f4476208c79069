// Micro-benchmarks of the BFV primitives at the PIR parameters (N = 4096, Q ≈ 2^55, P ≈ 2^28).
// Usage: netext-bench-he [iterations]
import Foundation
import HomomorphicEncryption

func measure(_ name: String, iterations: Int, _ body: () throws -> Void) throws {
    try body()  // warm-up
    var samples: [Double] = []
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
    samples.sort()
    let median = samples[samples.count / 2]
    print(String(format: "%-34@ median %10.1f µs   min %10.1f µs", name as NSString, median, samples[0]))
}

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20 : 20
let parameters = EncryptionParameters.n4096LogQ27_28_28LogT5
let context = try BFVContext(parameters: parameters)
print("parameters \(parameters.name): N=\(context.degree) t=\(parameters.plaintextModulus) Q=\(parameters.coefficientModuli) P=\(parameters.specialModulus)")
let q = context.moduli[0]
let ntt = context.transforms[0]
var rng = ChaCha20Generator.systemSeeded()
var row = (0..<4096).map { _ in rng.nextWord() % q.value }
try measure("NTT forward (one prime)", iterations: iterations * 10) { row.withUnsafeMutableBufferPointer { ntt.forward($0) } }
try measure("NTT inverse (one prime)", iterations: iterations * 10) { row.withUnsafeMutableBufferPointer { ntt.inverse($0) } }

var secretKey: SecretKey!
try measure("secret key", iterations: iterations) { secretKey = context.generateSecretKey() }
let values = (0..<4096).map { _ in UInt64(rng.nextWord() % 17) }
let plaintext = try context.encode(coefficients: values)
var ciphertext: Ciphertext!
try measure("encrypt (secret key, seeded)", iterations: iterations) { ciphertext = context.encrypt(plaintext, secretKey: secretKey) }
try measure("decrypt", iterations: iterations) { _ = context.decrypt(ciphertext, secretKey: secretKey) }
let prepared = context.prepare(plaintext)
try measure("plaintext × ciphertext", iterations: iterations) { _ = try context.multiply(ciphertext, plaintext: prepared) }
var evaluationKey: EvaluationKey!
try measure("Galois key (one element)", iterations: 5) {
    evaluationKey = try context.generateEvaluationKey(galoisElements: [4097], relinearization: true, secretKey: secretKey)
}
try measure("Galois automorphism + key switch", iterations: iterations) { _ = try context.applyGalois(ciphertext, element: 4097, key: evaluationKey) }
var extended: ExtendedCiphertext!
try measure("extend to Q·B", iterations: iterations) { extended = try context.extendForMultiplication(ciphertext) }
var accumulator = context.makeProductAccumulator(level: 2)
try measure("tensor accumulate", iterations: iterations) {
    var fresh = context.makeProductAccumulator(level: 2)
    try context.accumulateProduct(extended, extended, into: &fresh)
    accumulator = fresh
}
var product: Ciphertext!
try measure("scale Q·B → Q (finish)", iterations: iterations) { product = context.finish(accumulator) }
try measure("relinearize", iterations: iterations) { _ = try context.relinearize(product, key: evaluationKey) }
try measure("ciphertext × ciphertext + relin", iterations: iterations) {
    _ = try context.relinearize(try context.multiply(ciphertext, ciphertext), key: evaluationKey)
}
try measure("mod switch down", iterations: iterations) { _ = try context.modSwitchDown(ciphertext) }
let squared = try context.relinearize(try context.multiply(ciphertext, ciphertext), key: evaluationKey)
print("noise budget: fresh \(context.noiseBudget(ciphertext, secretKey: secretKey)) bits, after product \(context.noiseBudget(squared, secretKey: secretKey)) bits, after product+switch \(context.noiseBudget(try context.modSwitchDown(squared), secretKey: secretKey)) bits")
